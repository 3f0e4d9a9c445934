import type { AnalyticsStore } from '../analytics/port.js';
import { tenantWhere, Where } from './filters.js';
import type { Page } from './requests.js';
import { int, money, type TimeWindow } from './window.js';

export interface SessionQuery {
  orgId: string;
  projectId: string | null;
  window: TimeWindow;
  q?: string;
  provider?: string;
  model?: string;
  limit: number;
  offset: number;
}

interface SessionRow {
  session_id: string;
  request_count: string;
  total_cost_usd: string;
  prompt_tokens: string;
  completion_tokens: string;
  total_tokens: string;
  last_model: string | null;
  last_provider: string | null;
  first_at: string;
  last_at: string;
}

// Provider and model filters apply to the session's last request (what the list shows), hence HAVING.
const sessionsSql = (where: Where, having: Where) => `
  SELECT session_id, count() AS request_count, sum(total_cost_usd) AS total_cost_usd,
    sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, sum(total_tokens) AS total_tokens,
    argMax(model_served, started_at) AS last_model, argMax(provider, started_at) AS last_provider,
    formatDateTime(min(started_at), '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS first_at,
    formatDateTime(max(started_at), '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS last_at
  FROM requests FINAL ${where.sql} GROUP BY session_id
  ${having.clauses.length ? `HAVING ${having.clauses.join(' AND ')}` : ''}`;

const base = (q: Omit<SessionQuery, 'limit' | 'offset'>) => {
  const w = tenantWhere({ orgIds: [q.orgId], projectId: q.projectId, window: q.window }).add(
    'session_id IS NOT NULL',
  );
  if (q.q) w.add("positionCaseInsensitive(ifNull(session_id, ''), {q:String}) > 0", { q: q.q });
  return w;
};

export const listSessions = async (
  a: AnalyticsStore,
  q: SessionQuery,
): Promise<Page<Record<string, unknown>>> => {
  const w = base(q);
  const having = new Where();
  if (q.provider) having.add('last_provider = {provider:String}', { provider: q.provider });
  if (q.model) having.add('last_model = {model:String}', { model: q.model });
  const sql = sessionsSql(w, having);
  const params = { ...w.params, ...having.params };
  const [rows, count] = await Promise.all([
    a.query<SessionRow>(
      `${sql} ORDER BY max(started_at) DESC, session_id LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      {
        ...params,
        limit: q.limit,
        offset: q.offset,
      },
    ),
    a.query<{ n: string }>(`SELECT count() AS n FROM (${sql})`, params),
  ]);
  const data = rows.map((r) => ({
    ...r,
    request_count: int(r.request_count),
    total_cost_usd: money(r.total_cost_usd),
    prompt_tokens: int(r.prompt_tokens),
    completion_tokens: int(r.completion_tokens),
    total_tokens: int(r.total_tokens),
  }));
  const total = int(count[0]?.n);
  return { data, total, limit: q.limit, offset: q.offset, has_more: q.offset + data.length < total };
};

export const sessionFacets = async (a: AnalyticsStore, q: Omit<SessionQuery, 'limit' | 'offset'>) => {
  const w = base(q);
  const rows = await a.query<{ providers: string[]; models: string[] }>(
    `SELECT arraySort(groupUniqArrayIf(last_provider, last_provider IS NOT NULL)) AS providers,
            arraySort(groupUniqArrayIf(last_model, last_model IS NOT NULL)) AS models
     FROM (${sessionsSql(w, new Where())})`,
    w.params,
  );
  return { providers: rows[0]?.providers ?? [], models: rows[0]?.models ?? [] };
};
