import type { Pool } from '../../events/postgres/pool.js';
import type { SpendCapLevel } from './decider.js';

/** One cap of the read model rm_spend_caps (migration 0010). */
export interface SpendCapRow {
  level: SpendCapLevel;
  target_id: string;
  org_id: string;
  workspace_id: string;
  monthly_usd: string;
  updated_at: string;
  updated_by: string | null;
}

const COLUMNS = `level, target_id, org_id, workspace_id, monthly_usd,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at, updated_by`;

export const spendCap = async (pool: Pool, level: SpendCapLevel, targetId: string) =>
  (
    await pool.query<SpendCapRow>(
      `SELECT ${COLUMNS} FROM rm_spend_caps WHERE level = $1 AND target_id = $2`,
      [level, targetId],
    )
  ).rows[0] ?? null;

/** Caps by org and/or workspace; no filter lists every cap (the gateway's cache, the administrator). */
export const spendCaps = async (
  pool: Pool,
  filter: { orgId?: string; workspaceIds?: readonly string[] } = {},
): Promise<SpendCapRow[]> =>
  (
    await pool.query<SpendCapRow>(
      `SELECT ${COLUMNS} FROM rm_spend_caps
       WHERE ($1::text IS NULL OR org_id = $1) AND ($2::text[] IS NULL OR workspace_id = ANY($2))
       ORDER BY org_id, CASE level WHEN 'org' THEN 0 WHEN 'project' THEN 1 ELSE 2 END, target_id`,
      [filter.orgId ?? null, filter.workspaceIds ? [...filter.workspaceIds] : null],
    )
  ).rows;
