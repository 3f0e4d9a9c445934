import type { Pool } from '../../events/postgres/pool.js';
import type { PolicyDocument, PolicyLayer, PolicyScope } from '../../policy/document.js';
import type { ScopedPolicy } from '../../policy/evaluate.js';
import { PolicySet } from '../../policy/set.js';
import { POLICY_CATEGORY } from './projection.js';

/** One policy of the read model rm_policies (migrations 0016, 0018). */
export interface PolicyRow {
  layer: PolicyLayer;
  scope: PolicyScope;
  target_id: string;
  org_id: string;
  workspace_id: string;
  revision: number;
  document: PolicyDocument | null;
  updated_at: string;
  updated_by: string | null;
}

const COLUMNS = `layer, scope, target_id, org_id, workspace_id, revision, document,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at, updated_by`;

/** The row of one scope and layer (also when cleared: its revision), or null when none was ever set. */
export const policyOf = async (
  pool: Pool,
  layer: PolicyLayer,
  scope: PolicyScope,
  targetId: string,
): Promise<PolicyRow | null> =>
  (
    await pool.query<PolicyRow>(
      `SELECT ${COLUMNS} FROM rm_policies WHERE layer = $1 AND scope = $2 AND target_id = $3`,
      [layer, scope, targetId],
    )
  ).rows[0] ?? null;

/** Policies in force, by organization and/or workspaces; no filter lists them all. */
export const policiesInForce = async (
  pool: Pool,
  filter: { orgId?: string; workspaceIds?: readonly string[] } = {},
): Promise<PolicyRow[]> =>
  (
    await pool.query<PolicyRow>(
      `SELECT ${COLUMNS} FROM rm_policies
       WHERE document IS NOT NULL AND ($1::text IS NULL OR org_id = $1) AND ($2::text[] IS NULL OR workspace_id = ANY($2))
       ORDER BY org_id, CASE scope WHEN 'org' THEN 0 WHEN 'project' THEN 1 ELSE 2 END, target_id, layer`,
      [filter.orgId ?? null, filter.workspaceIds ? [...filter.workspaceIds] : null],
    )
  ).rows;

/**
 * A number that moves only when a policy changes: every change raises one row's revision and rows
 * are never deleted, so the sum only grows (a rebuild lands on the same sum and the same content).
 */
export const policyRevision = async (pool: Pool): Promise<number> =>
  Number(
    (await pool.query<{ sum: string }>('SELECT coalesce(sum(revision), 0)::text AS sum FROM rm_policies'))
      .rows[0]?.sum ?? 0,
  );

export const scopedPolicies = (rows: readonly PolicyRow[]): ScopedPolicy[] =>
  rows
    .filter((r): r is PolicyRow & { document: PolicyDocument } => r.document !== null)
    .map((r) => ({
      layer: r.layer,
      scope: r.scope,
      target_id: r.target_id,
      revision: r.revision,
      document: r.document,
    }));

/**
 * Every policy in force, for an in-memory snapshot (the gateway's, the policy role's and trace
 * ingest's SnapshotCache), reloaded only when a policy changed.
 */
export const policySnapshotSource = (pool: Pool) => ({
  revision: () => policyRevision(pool),
  categories: [POLICY_CATEGORY],
  load: async () => new PolicySet(scopedPolicies(await policiesInForce(pool))),
});
