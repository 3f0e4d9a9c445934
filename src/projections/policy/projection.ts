import type { PolicyEvent } from '../../commands/policy/events.js';
import type { StoredEvent } from '../../events/event-store.js';
import type { PoolClient } from '../../events/postgres/pool.js';
import { clearReadModel, type Projection } from '../projection.js';

/** The stream category of policies (commands/policy/decider.ts `policyStream`). */
export const POLICY_CATEGORY = 'policy';

const applyOne = async (c: PoolClient, stored: StoredEvent): Promise<void> => {
  const e = { type: stored.type, data: stored.data } as PolicyEvent;
  const at = stored.metadata.now ?? stored.recordedAt.toISOString();
  const p = e.data;
  const document = e.type === 'PolicySet' ? JSON.stringify(e.data.document) : null;
  await c.query(
    `INSERT INTO rm_policies (layer, scope, target_id, org_id, workspace_id, revision, document, updated_at, updated_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (scope, target_id, layer) DO UPDATE SET revision = EXCLUDED.revision, document = EXCLUDED.document,
       updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
    [
      // Events from before layers were named are the workspace's.
      p.layer ?? 'workspace',
      p.scope,
      p.target_id,
      p.org_id,
      p.workspace_id,
      stored.streamVersion,
      document,
      at,
      stored.metadata.actor ?? null,
    ],
  );
};

/** rm_policies: the policy in force per scope and layer, and its revision (SPEC 1.9). */
export const policyProjection: Projection = {
  name: 'policy',
  // 2: both layers of a scope (migration 0018).
  version: 2,
  categories: [POLICY_CATEGORY],
  reset: async (client) => {
    await clearReadModel(client, ['rm_policies']);
  },
  apply: async (client, events) => {
    for (const e of events) await applyOne(client, e);
  },
};
