import type { Pool } from '../events/postgres/pool.js';
import { decryptSecret } from '../lib/crypto.js';
import type { Credentials } from '../providers/provider.js';
import type { SnapshotSource } from './snapshot-cache.js';

/**
 * What the request path needs from the control plane, held in memory: each organization's
 * provider disallow list and tracing flag, each project's tracing flag, the projects' BYOK
 * connections named `primary` and the platform keys, decrypted once per load.
 */
export interface TenancySnapshot {
  org(orgId: string): { disallow: ReadonlySet<string>; tracing: boolean } | undefined;
  projectTracing(projectId: string): boolean;
  /** BYOK connection `primary` of the project for the adapter, else the platform key, else null. */
  credentials(projectId: string, adapter: string): Credentials | null;
}

interface Row {
  [key: string]: unknown;
}

export const tenancySource = (
  pool: Pool,
  masterKey: Buffer,
  onDecryptError: (what: string) => void,
): SnapshotSource<TenancySnapshot> => ({
  revision: async () =>
    (
      await pool.query<{ position: number }>(
        "SELECT position FROM svc_projection_checkpoints WHERE name = 'control_plane'",
      )
    ).rows[0]?.position ?? 0,
  load: async () => {
    const [orgs, projects, conns, platform] = await Promise.all([
      pool.query<Row>('SELECT org_id, provider_disallow, tracing FROM rm_orgs'),
      pool.query<Row>('SELECT project_id, tracing FROM rm_projects'),
      pool.query<Row>(
        `SELECT connection_id, project_id, provider, base_url, metadata, secret_ciphertext FROM rm_connections
         WHERE deleted_at IS NULL AND name = 'primary' AND project_id IS NOT NULL`,
      ),
      pool.query<Row>('SELECT provider, base_url, metadata, secret_ciphertext FROM rm_platform_keys'),
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
        byok.set(`${r.project_id as string}|${r.provider as string}`, {
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
      try {
        platformKeys.set(provider, {
          secret: decryptSecret(masterKey, r.secret_ciphertext as string, `platform:${provider}`),
          baseUrl: (r.base_url as string | null) ?? null,
          metadata: r.metadata as Record<string, unknown>,
          funding: 'wallet',
          connectionId: null,
        });
      } catch {
        onDecryptError(`platform key ${provider}`);
      }
    }
    return {
      org: (orgId) => orgMap.get(orgId),
      projectTracing: (projectId) => projectTracing.get(projectId) ?? false,
      credentials: (projectId, adapter) =>
        byok.get(`${projectId}|${adapter}`) ?? platformKeys.get(adapter) ?? null,
    };
  },
});
