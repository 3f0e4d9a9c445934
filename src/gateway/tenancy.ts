import { platformKeyAad } from '../commands/connections/events.js';
import type { Pool } from '../events/postgres/pool.js';
import { decryptSecret } from '../lib/crypto.js';
import { CONTROL_PLANE_CATEGORIES, controlPlaneProjection } from '../projections/control-plane/projection.js';
import { readModelRevision } from '../projections/runner.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import type { Credentials } from '../providers/provider.js';
import type { SnapshotSource } from './snapshot-cache.js';

/**
 * What credentials are resolved for: a candidate's lane, its adapter, the lane's own origin (null:
 * the provider's public API) and a connection a selector named.
 */
export type CredentialTarget = Pick<RegistryEndpoint, 'lane' | 'adapter' | 'connection' | 'base_url'>;

/**
 * What the request path needs from the control plane, held in memory: each organization's
 * provider disallow list and tracing flag, each project's tracing flag, the projects' BYOK
 * connections and the platform keys, decrypted once per load.
 */
export interface TenancySnapshot {
  org(orgId: string): { disallow: ReadonlySet<string>; tracing: boolean } | undefined;
  projectTracing(projectId: string): boolean;
  /**
   * The credential an attempt on the target is made with (SPEC 4.7, 5): the project's connection of
   * the name a selector gave (else `primary`) for the lane, else one of that name for the whole
   * adapter; for an unnamed target then the lane's platform key, else the adapter's; else null.
   */
  credentials(projectId: string, target: CredentialTarget): Credentials | null;
  /** Whether the project has a connection of this name serving the target's lane. */
  hasConnection(projectId: string, target: CredentialTarget, name: string): boolean;
}

interface Row {
  [key: string]: unknown;
}

/** Keys of the maps below: a lane of '' is a credential of every lane of its adapter. */
const connectionKey = (projectId: string, adapter: string, lane: string, name: string) =>
  `${projectId}|${adapter}|${lane}|${name}`;
const platformKey = (adapter: string, lane: string) => `${adapter}|${lane}`;

/** The resolution order of SPEC 4.7 and 5 over decrypted credentials (pure, for the snapshot). */
export const credentialResolver = (
  connections: ReadonlyMap<string, Credentials>,
  platform: ReadonlyMap<string, Credentials>,
) => {
  const connection = (projectId: string, target: CredentialTarget, name: string) => {
    const ofLane = connections.get(connectionKey(projectId, target.adapter, target.lane, name));
    if (ofLane) return ofLane;
    // A connection for the whole adapter serves the adapter's own lane (named like it), a lane
    // without an origin of its own (the provider's public API), a lane without credentials of its
    // own (another environment of the same provider), and wherever its own base_url points. A lane
    // the operator gave its own origin and its own platform key (another upstream behind the same
    // wire) has its own credentials (SPEC 4.7): the tenant's key never goes there unless a
    // connection names that lane.
    const ofAdapter = connections.get(connectionKey(projectId, target.adapter, '', name));
    const serves =
      ofAdapter !== undefined &&
      (target.lane === target.adapter ||
        target.base_url === null ||
        ofAdapter.baseUrl !== null ||
        !platform.has(platformKey(target.adapter, target.lane)));
    return serves ? ofAdapter : null;
  };
  return {
    credentials: (projectId: string, target: CredentialTarget): Credentials | null => {
      const named = connection(projectId, target, target.connection ?? 'primary');
      if (named || target.connection !== undefined) return named;
      return (
        platform.get(platformKey(target.adapter, target.lane)) ??
        platform.get(platformKey(target.adapter, '')) ??
        null
      );
    },
    hasConnection: (projectId: string, target: CredentialTarget, name: string): boolean =>
      connection(projectId, target, name) !== null,
  };
};

export const tenancySource = (
  pool: Pool,
  masterKey: Buffer,
  onDecryptError: (what: string) => void,
): SnapshotSource<TenancySnapshot> => ({
  categories: CONTROL_PLANE_CATEGORIES,
  revision: () => readModelRevision(pool, controlPlaneProjection.name, CONTROL_PLANE_CATEGORIES),
  load: async () => {
    const [orgs, projects, conns, platform] = await Promise.all([
      pool.query<Row>('SELECT org_id, provider_disallow, tracing FROM rm_orgs'),
      pool.query<Row>('SELECT project_id, tracing FROM rm_projects'),
      pool.query<Row>(
        `SELECT connection_id, project_id, provider, lane, name, base_url, metadata, secret_ciphertext
         FROM rm_connections WHERE deleted_at IS NULL AND project_id IS NOT NULL`,
      ),
      pool.query<Row>('SELECT provider, lane, base_url, metadata, secret_ciphertext FROM rm_platform_keys'),
    ]);
    const orgMap = new Map(
      orgs.rows.map((r) => [
        r.org_id as string,
        { disallow: new Set(r.provider_disallow as string[]), tracing: r.tracing as boolean },
      ]),
    );
    const projectTracing = new Map(projects.rows.map((r) => [r.project_id as string, r.tracing as boolean]));
    const byok = new Map<string, Credentials>();
    for (const r of conns.rows) {
      const id = r.connection_id as string;
      try {
        const key = connectionKey(
          r.project_id as string,
          r.provider as string,
          (r.lane as string | null) ?? '',
          r.name as string,
        );
        byok.set(key, {
          secret: decryptSecret(masterKey, r.secret_ciphertext as string, id),
          baseUrl: (r.base_url as string | null) ?? null,
          metadata: r.metadata as Record<string, unknown>,
          funding: 'byok',
          connectionId: id,
        });
      } catch {
        onDecryptError(`connection ${id}`);
      }
    }
    const platformKeys = new Map<string, Credentials>();
    for (const r of platform.rows) {
      const provider = r.provider as string;
      const lane = r.lane as string;
      try {
        platformKeys.set(platformKey(provider, lane), {
          secret: decryptSecret(masterKey, r.secret_ciphertext as string, platformKeyAad(provider, lane)),
          baseUrl: (r.base_url as string | null) ?? null,
          metadata: r.metadata as Record<string, unknown>,
          funding: 'wallet',
          connectionId: null,
        });
      } catch {
        onDecryptError(lane ? `platform key ${provider} of lane ${lane}` : `platform key ${provider}`);
      }
    }
    return {
      org: (orgId) => orgMap.get(orgId),
      projectTracing: (projectId) => projectTracing.get(projectId) ?? false,
      ...credentialResolver(byok, platformKeys),
    };
  },
});
