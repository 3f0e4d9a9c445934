import type { StoredEvent } from '../events/event-store.js';
import type { PoolClient } from '../events/postgres/pool.js';

/**
 * A Postgres read model fed from the event store in global order (STYLE.md rule 5). `apply` runs
 * inside the transaction that also moves the checkpoint, so a crash leaves both where they were.
 */
export interface Projection {
  name: string;
  /** Bumping the version rebuilds the read model by replay from position 0. */
  version: number;
  /** Stream categories this projection reads; absent means all. */
  categories?: readonly string[];
  /** Empty the read model (called inside the rebuild transaction). */
  reset(client: PoolClient): Promise<void>;
  apply(client: PoolClient, events: readonly StoredEvent[]): Promise<void>;
}

/**
 * Empties a read model's tables inside the rebuild transaction. DELETE, not TRUNCATE: TRUNCATE
 * takes ACCESS EXCLUSIVE locks table by table, so a reader that holds one table and waits for the
 * next (the gateway's registry snapshot reads three in one transaction) deadlocked against a
 * rebuild; DELETE takes row locks only, and readers keep seeing the old rows until it commits.
 */
export const clearReadModel = async (client: PoolClient, tables: readonly string[]): Promise<void> => {
  await client.query(tables.map((table) => `DELETE FROM ${table}`).join('; '));
};
