import type { AnalyticsStore } from '../analytics/port.js';
import { ServiceError } from '../lib/errors.js';
import { int, money } from './window.js';

export interface SpendEntry {
  scope: 'org' | 'project' | 'api_key';
  id: string;
  org_id: string;
  spend_usd: string;
  requests: number;
}

/** Spend per org, project and API key in one UTC calendar month (the spend-cap cache's input). */
export const monthlyUsageSnapshot = async (
  a: AnalyticsStore,
  month: string,
  now: Date,
  orgIds: readonly string[],
) => {
  const m = month === '' ? null : /^(\d{4})-(0[1-9]|1[0-2])$/.exec(month);
  if (month !== '' && !m) throw new ServiceError('bad_request', 'month must be YYYY-MM');
  const year = m ? Number(m[1]) : now.getUTCFullYear();
  const mon = m ? Number(m[2]) - 1 : now.getUTCMonth();
  const from = new Date(Date.UTC(year, mon, 1));
  const to = new Date(Date.UTC(year, mon + 1, 1));
  const rows = await a.query<{
    org_id: string;
    project_id: string;
    api_key_id: string;
    spend: string;
    n: string;
  }>(
    `SELECT org_id, project_id, api_key_id, toString(sum(total_cost_usd)) AS spend, count() AS n
     FROM requests FINAL
     WHERE started_at >= {from:DateTime64(3, 'UTC')} AND started_at < {to:DateTime64(3, 'UTC')}
       AND (empty({org_ids:Array(String)}) OR org_id IN {org_ids:Array(String)})
     GROUP BY GROUPING SETS ((org_id), (org_id, project_id), (org_id, project_id, api_key_id))
     ORDER BY org_id, project_id, api_key_id`,
    { from, to, org_ids: [...orgIds] },
  );
  const entries: SpendEntry[] = rows.map((r) => {
    const scope = r.api_key_id ? 'api_key' : r.project_id ? 'project' : 'org';
    const id = scope === 'api_key' ? r.api_key_id : scope === 'project' ? r.project_id : r.org_id;
    return { scope, id, org_id: r.org_id, spend_usd: money(r.spend), requests: int(r.n) };
  });
  return { month: from.toISOString().slice(0, 7), as_of: now.toISOString(), entries };
};
