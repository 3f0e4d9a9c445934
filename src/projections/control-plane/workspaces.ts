import type { WorkspaceDirectory } from '../../commands/ports.js';
import type { Pool } from '../../events/postgres/pool.js';

/** The write side's one question about workspaces, answered from rm_workspaces (projection.ts). */
export const workspaceDirectory = (pool: Pool): WorkspaceDirectory => ({
  exists: async (workspaceId) =>
    ((await pool.query('SELECT 1 FROM rm_workspaces WHERE workspace_id = $1', [workspaceId])).rowCount ?? 0) >
    0,
});

/** The id of a workspace named by id or by name (the CLI's --workspace), or null. */
export const workspaceIdOf = async (pool: Pool, ref: string): Promise<string | null> => {
  const { rows } = await pool.query<{ workspace_id: string }>(
    'SELECT workspace_id FROM rm_workspaces WHERE workspace_id = $1 OR name = $1 ORDER BY workspace_id = $1 DESC LIMIT 1',
    [ref],
  );
  return rows[0]?.workspace_id ?? null;
};
