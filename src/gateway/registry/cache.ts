import type { Pool } from '../../events/postgres/pool.js';
import { REGISTRY_CATEGORY } from '../../projections/registry/projection.js';
import { SnapshotCache, type SnapshotCacheOptions } from '../snapshot-cache.js';
import { loadRegistrySnapshot, registryRevision } from './load.js';
import { EMPTY_REGISTRY, type RegistrySnapshot } from './snapshot.js';

export type RegistryCacheOptions = Omit<SnapshotCacheOptions<RegistrySnapshot>, 'initial'>;

/**
 * The gateway's registry snapshot, kept within a second of the read model by the shared snapshot
 * cache (revision row polled eagerly after an append notification). Empty until started.
 */
export class RegistrySnapshotCache extends SnapshotCache<RegistrySnapshot> {
  constructor(pool: Pool, connectionString: string, options: RegistryCacheOptions = {}) {
    super(
      {
        revision: () => registryRevision(pool),
        load: () => loadRegistrySnapshot(pool),
        categories: [REGISTRY_CATEGORY],
      },
      connectionString,
      { eagerPollMs: 50, ...options, initial: EMPTY_REGISTRY },
    );
  }
}
