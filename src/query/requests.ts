import type { AnalyticsStore } from '../analytics/port.js';
import { type RequestFilters, requestFilters, tenantWhere, type Where } from './filters.js';
import { int, money, type TimeWindow } from './window.js';

/** Request rows as the query routes return them (SPEC 2.12); body refs stay internal. */
export const REQUEST_COLUMNS = `request_id, org_id, project_id, workspace_id, api_key_id, route, model_requested,
  model_served, provider, stream, status, http_status, error_type, error_code,
  started_at, finished_at,
  latency_ms, ttfb_ms, prompt_tokens, completion_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
  reasoning_tokens, total_cost_usd, billing_status, billing_reason, funding, session_id, end_user_id,
  full_tracing, tool_call_count, attempt_count, req_body_pack != '' AS has_request_body,
  res_body_pack != '' AS has_response_body`;

export type RawRow = Record<string, unknown>;

const NUMERIC = [
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
];

/** Counters arrive as strings (64-bit) and money as padded decimals; both are normalized here. */
// Columns keep their own names in the SELECT (an alias would shadow the column in WHERE), so the
// engine's `YYYY-MM-DD hh:mm:ss.sss` UTC text becomes RFC 3339 here.
const iso = (v: unknown): unknown =>
  typeof v === 'string' && v.length >= 19 ? `${v.replace(' ', 'T')}Z` : v;

export const shapeRequest = (r: RawRow): RawRow => {
  const out: RawRow = {
    ...r,
    total_cost_usd: money(r.total_cost_usd),
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
  };
  for (const k of NUMERIC) out[k] = int(r[k]);
  if (r.reasoning_tokens !== null && r.reasoning_tokens !== undefined)
    out.reasoning_tokens = int(r.reasoning_tokens);
  return out;
};

export interface Page<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

export const page = <T>(data: T[], total: number, limit: number, offset: number): Page<T> => ({
  data,
  total,
  limit,
  offset,
  has_more: offset + data.length < total,
});

export interface RequestQuery {
  orgIds: readonly string[];
  projectId: string | null;
  window: TimeWindow;
  filters: RequestFilters;
  limit: number;
  offset: number;
}

const requestWhere = (q: RequestQuery): Where =>
  requestFilters(tenantWhere({ orgIds: q.orgIds, projectId: q.projectId, window: q.window }), q.filters);

export const listRequests = async (a: AnalyticsStore, q: RequestQuery): Promise<Page<RawRow>> => {
  const w = requestWhere(q);
  const [rows, count] = await Promise.all([
    a.query(
      `SELECT ${REQUEST_COLUMNS} FROM requests FINAL ${w.sql}
       ORDER BY started_at DESC, request_id DESC LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      { ...w.params, limit: q.limit, offset: q.offset },
    ),
    a.query<{ n: string }>(`SELECT count() AS n FROM requests FINAL ${w.sql}`, w.params),
  ]);
  return page(rows.map(shapeRequest), int(count[0]?.n), q.limit, q.offset);
};

export const requestFacets = async (
  a: AnalyticsStore,
  q: Omit<RequestQuery, 'limit' | 'offset' | 'filters'>,
) => {
  const w = tenantWhere({ orgIds: q.orgIds, projectId: q.projectId, window: q.window });
  const rows = await a.query<{ providers: string[]; models: string[] }>(
    `SELECT arraySort(groupUniqArrayIf(provider, provider IS NOT NULL)) AS providers,
            arraySort(groupUniqArrayIf(model_served, model_served IS NOT NULL)) AS models
     FROM requests FINAL ${w.sql}`,
    w.params,
  );
  return { providers: rows[0]?.providers ?? [], models: rows[0]?.models ?? [] };
};

/** The stored row, body refs included, of one request inside the tenant; null when not there. */
export const findRequest = async (
  a: AnalyticsStore,
  orgId: string,
  projectId: string | null,
  requestId: string,
): Promise<RawRow | null> => {
  const w = tenantWhere({ orgIds: [orgId], projectId, window: { from: null, to: null } }).add(
    'request_id = {request_id:String}',
    { request_id: requestId },
  );
  const rows = await a.query(
    `SELECT ${REQUEST_COLUMNS}, attempts, tool_summary,
       req_body_pack, req_body_offset, req_body_length, req_body_byte_count, req_body_blake3,
       res_body_pack, res_body_offset, res_body_length, res_body_byte_count, res_body_blake3
     FROM requests FINAL ${w.sql} LIMIT 1`,
    w.params,
  );
  return rows[0] ?? null;
};

/**
 * The priced lines of one request (SPEC 3 cost lines), in line order: what the console's request
 * detail shows beside the attempts. Amounts stay decimal strings (exact money).
 */
export const requestCostLines = async (
  a: AnalyticsStore,
  orgId: string,
  projectId: string | null,
  requestId: string,
): Promise<Record<string, unknown>[]> => {
  const w = tenantWhere({ orgIds: [orgId], projectId, window: { from: null, to: null } }).add(
    'request_id = {request_id:String}',
    { request_id: requestId },
  );
  return a.query(
    `SELECT line_index, meter, modality, tier, cache_ttl, tool_type, toString(quantity) AS quantity,
       toString(unit_price) AS unit_price, toString(amount) AS amount, estimated, funding,
       provenance_source, rate_card_id, rate_row_id, rate_card_revision, zero_rated_rule
     FROM request_cost_lines FINAL ${w.sql} ORDER BY line_index`,
    w.params,
  );
};

export const sessionTimeline = async (
  a: AnalyticsStore,
  q: { orgId: string; projectId: string | null; sessionId: string; limit: number; offset: number },
): Promise<Page<RawRow>> => {
  const w = tenantWhere({ orgIds: [q.orgId], projectId: q.projectId, window: { from: null, to: null } }).add(
    'session_id = {session_id:String}',
    { session_id: q.sessionId },
  );
  const [rows, count] = await Promise.all([
    a.query(
      `SELECT ${REQUEST_COLUMNS} FROM requests FINAL ${w.sql}
       ORDER BY started_at ASC, request_id ASC LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      { ...w.params, limit: q.limit, offset: q.offset },
    ),
    a.query<{ n: string }>(`SELECT count() AS n FROM requests FINAL ${w.sql}`, w.params),
  ]);
  return page(rows.map(shapeRequest), int(count[0]?.n), q.limit, q.offset);
};
