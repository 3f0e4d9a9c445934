import type { AnalyticsStore } from '../analytics/port.js';
import { formatUsd, parseUsd, sumUsd } from '../lib/money.js';
import type { DimensionBinding } from './dimensions.js';
import { tenantWhere } from './filters.js';
import { int, money } from './window.js';

/**
 * Exact spend of one workspace for one closed calendar month, by org, project, API key, provider
 * and model (SPEC 4.5). The money is the requests' priced totals (FINAL, so redelivered rows count
 * once), the same figure cost_detail reconciles to.
 */
export interface ReportQuery {
  workspaceId: string;
  orgIds: readonly string[];
  projectId: string | null;
  from: Date;
  to: Date;
  dimension: DimensionBinding;
  dimensionValue: string | null;
}

interface ReportRow {
  org_id: string;
  project_id: string;
  api_key_id: string;
  provider: string | null;
  model: string | null;
  dimension_value?: string | null;
  requests: string;
  prompt_tokens: string;
  completion_tokens: string;
  total_tokens: string;
  cost_usd: string;
}

export const workspaceReport = async (a: AnalyticsStore, q: ReportQuery) => {
  const w = tenantWhere({ orgIds: q.orgIds, projectId: q.projectId, window: q });
  const hasDim = q.dimension.keys.length === 1;
  const dimSelect = hasDim ? `, ${q.dimension.expressions[0]} AS dimension_value` : '';
  const dimGroup = hasDim ? ', dimension_value' : '';
  const having =
    hasDim && q.dimensionValue !== null ? 'HAVING dimension_value = {dimension_value:String}' : '';
  const rows = await a.query<ReportRow>(
    `SELECT org_id, project_id, api_key_id, provider, ifNull(model_served, model_requested) AS model${dimSelect},
       count() AS requests, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
       sum(total_tokens) AS total_tokens, toString(sum(total_cost_usd)) AS cost_usd
     FROM requests FINAL ${w.sql}
     GROUP BY org_id, project_id, api_key_id, provider, model${dimGroup} ${having}
     ORDER BY org_id, project_id, api_key_id, provider, model${dimGroup}`,
    { ...w.params, ...q.dimension.params, dimension_value: q.dimensionValue },
  );
  const data = rows.map((r) => ({
    ...r,
    requests: int(r.requests),
    prompt_tokens: int(r.prompt_tokens),
    completion_tokens: int(r.completion_tokens),
    total_tokens: int(r.total_tokens),
    cost_usd: money(r.cost_usd),
  }));
  const total = sumUsd(rows.map((r) => parseUsd(r.cost_usd)));
  return {
    workspace_id: q.workspaceId,
    month: q.from.toISOString().slice(0, 7),
    dimension: q.dimension.keys[0] ?? null,
    dimension_value: q.dimensionValue,
    total_cost_usd: formatUsd(total),
    data,
  };
};
