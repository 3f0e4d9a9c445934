import type { AnalyticsStore } from '../analytics/port.js';
import { bodyUrls } from './body.js';
import { tenantWhere } from './filters.js';
import { findRequest, type Page, page, type RawRow } from './requests.js';
import { parseObject, rfc3339, spansOfRequest, spansSql, type TraceScope, traceTenant } from './traces.js';
import { int } from './window.js';

/**
 * Summaries over traces and the requests that belong to them (SPEC 4.5): a session's traces, a
 * request's trace metadata, a session's requests with their trace ids, a request's tool calls.
 * Same rules as traces.ts: one row per id, every read bound to the tenant.
 */

export interface TraceSummary {
  trace_id: string;
  span_count: number;
  started_at: string;
  ended_at: string;
  root_span_name: string;
  request_ids: string[];
  full_trace_available: boolean;
}

/**
 * The traces with at least one span in the session, oldest first; each summarized over all its
 * spans (a span without the session attribute still counts). The root name is the earliest root
 * span's, or the earliest span's while no root has arrived.
 */
export const sessionTraces = async (
  a: AnalyticsStore,
  s: TraceScope,
  q: { sessionId: string; limit: number; offset: number },
): Promise<Page<TraceSummary>> => {
  const t = traceTenant(s);
  const inSession = `SELECT trace_id FROM trace_spans WHERE ${t.sql} AND session_id = {session_id:String}`;
  const params = { ...t.params, session_id: q.sessionId };
  const [rows, count] = await Promise.all([
    a.query(
      `SELECT trace_id, count() AS span_count, min(started_at) AS first_start, max(ended_at) AS last_end,
         if(countIf(parent_span_id = '') > 0, argMinIf(span_name, started_at, parent_span_id = ''),
            argMin(span_name, started_at)) AS root_name,
         arraySort(groupUniqArrayIf(request_id, request_id != '')) AS request_ids,
         max(payload_state = 'full') AS any_full_span
       FROM (
         SELECT trace_id, span_id, parent_span_id, span_name, started_at, ended_at, request_id, payload_state, version
         FROM trace_spans WHERE ${t.sql} AND trace_id IN (${inSession})
         ORDER BY version DESC LIMIT 1 BY project_id, trace_id, span_id)
       GROUP BY trace_id
       ORDER BY first_start, trace_id LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      { ...params, limit: q.limit, offset: q.offset },
    ),
    a.query<{ n: string }>(`SELECT uniqExact(trace_id) AS n FROM (${inSession})`, params),
  ]);
  const ids = rows.map((r) => String(r.trace_id));
  const fullArtifacts = new Set<string>();
  if (ids.length > 0) {
    const full = await a.query<{ trace_id: string }>(
      `SELECT DISTINCT trace_id FROM (
         SELECT trace_id, artifact_id, payload_state, ingested_at FROM trace_artifacts
         WHERE ${t.sql} AND trace_id IN {trace_ids:Array(String)}
         ORDER BY ingested_at DESC LIMIT 1 BY project_id, trace_id, artifact_id)
       WHERE payload_state = 'full'`,
      { ...t.params, trace_ids: ids },
    );
    for (const r of full) fullArtifacts.add(r.trace_id);
  }
  const data = rows.map((r) => ({
    trace_id: String(r.trace_id),
    span_count: int(r.span_count),
    started_at: rfc3339(r.first_start),
    ended_at: rfc3339(r.last_end),
    root_span_name: String(r.root_name ?? ''),
    request_ids: (r.request_ids as string[]) ?? [],
    full_trace_available: Boolean(int(r.any_full_span)) || fullArtifacts.has(String(r.trace_id)),
  }));
  return page(data, int(count[0]?.n), q.limit, q.offset);
};

/** Names and counts only, whatever else the stored JSON holds (SPEC 1.10 safe tool summary). */
export const safeToolSummary = (
  text: unknown,
): { declared: string[]; calls: { name: string; count: number }[] } => {
  const o = parseObject(text);
  const declared = Array.isArray(o.declared)
    ? o.declared.filter((n): n is string => typeof n === 'string')
    : [];
  const calls = Array.isArray(o.calls)
    ? o.calls.flatMap((c) => {
        const { name, count } = (c ?? {}) as { name?: unknown; count?: unknown };
        return typeof name === 'string' && typeof count === 'number' ? [{ name, count }] : [];
      })
    : [];
  return { declared, calls };
};

const traceRefs = (spans: RawRow[]) =>
  spans.map((x) => ({
    trace_id: String(x.trace_id),
    span_id: String(x.span_id),
    openinference_span_kind: String(x.openinference_span_kind ?? ''),
    source: String(x.source ?? ''),
  }));

/** GET /api/traces/requests/:id: null when the tenant has no such request row. */
export const requestTraceInfo = async (a: AnalyticsStore, s: TraceScope, requestId: string) => {
  const row = await findRequest(a, s.orgId, s.projectId, requestId);
  if (!row) return null;
  const spans = await spansOfRequest(a, s, [requestId]);
  const full = row.full_tracing === true || row.full_tracing === 1 || row.full_tracing === 'true';
  return {
    request_id: requestId,
    org_id: s.orgId,
    session_id: row.session_id ?? null,
    started_at: rfc3339(row.started_at),
    model: row.model_served ?? row.model_requested ?? null,
    status: row.status,
    trace_ids: [...new Set(spans.map((x) => String(x.trace_id)))],
    spans: traceRefs(spans),
    full_tracing: full,
    // Bodies are the opt-in data class (SPEC 1.10): their URLs only when full tracing recorded them.
    body_urls: full ? bodyUrls(row) : null,
    tool_summary: safeToolSummary(row.tool_summary),
    tool_call_count: int(row.tool_call_count),
  };
};

/** GET /api/traces/sessions/:id: the session's requests oldest first, each with its LLM span. */
export const sessionRequestTraces = async (
  a: AnalyticsStore,
  s: TraceScope,
  q: { sessionId: string; limit: number; offset: number },
) => {
  const w = tenantWhere({ orgIds: [s.orgId], projectId: s.projectId, window: { from: null, to: null } }).add(
    'session_id = {session_id:String}',
    { session_id: q.sessionId },
  );
  const [rows, count] = await Promise.all([
    a.query(
      `SELECT request_id, started_at, model_requested, model_served, status, full_tracing FROM requests FINAL ${w.sql}
       ORDER BY started_at ASC, request_id ASC LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      { ...w.params, limit: q.limit, offset: q.offset },
    ),
    a.query<{ n: string }>(`SELECT count() AS n FROM requests FINAL ${w.sql}`, w.params),
  ]);
  const spans = await spansOfRequest(
    a,
    s,
    rows.map((r) => String(r.request_id)),
    10 * rows.length,
  );
  const first = new Map<string, RawRow>();
  for (const x of spans) if (!first.has(String(x.request_id))) first.set(String(x.request_id), x);
  const data = rows.map((r) => {
    const span = first.get(String(r.request_id));
    return {
      request_id: String(r.request_id),
      started_at: rfc3339(r.started_at),
      model: r.model_served ?? r.model_requested,
      status: r.status,
      trace_id: span ? String(span.trace_id) : null,
      span_id: span ? String(span.span_id) : null,
      full_tracing: Boolean(r.full_tracing),
    };
  });
  return page(data, int(count[0]?.n), q.limit, q.offset);
};

const artifactPath = (orgId: string, traceId: string, artifactId: string) =>
  `/api/traces/${encodeURIComponent(traceId)}/artifacts/${encodeURIComponent(artifactId)}?org_id=${encodeURIComponent(orgId)}`;

/**
 * GET /api/traces/tools/:id: the request row's tool summary (names and counts); with full tracing,
 * the TOOL spans of the trace holding the request's LLM span (every TOOL span of that trace: the
 * agent runs the calls the model asked for as sibling spans) with refs to their argument and result
 * artifacts, and the response body URL, whose tool calls are the model's own record of them.
 */
export const toolTrace = async (a: AnalyticsStore, s: TraceScope, requestId: string) => {
  const info = await requestTraceInfo(a, s, requestId);
  if (!info) return null;
  const base = {
    request_id: requestId,
    tool_summary: info.tool_summary,
    tool_call_count: info.tool_call_count,
    full_tracing: info.full_tracing,
  };
  if (!info.full_tracing) return { ...base, full_tool_trace: null };
  const traceId = info.spans[0]?.trace_id ?? null;
  let toolSpans: RawRow[] = [];
  if (traceId) {
    const t = traceTenant(s);
    const where = `${t.sql} AND trace_id = {trace_id:String} AND openinference_span_kind = 'TOOL'`;
    const params = { ...t.params, trace_id: traceId };
    const [spans, artifacts] = await Promise.all([
      a.query(spansSql(where, 'LIMIT 1000'), params),
      a.query(
        `SELECT artifact_id, span_id, kind, payload_state FROM (
           SELECT artifact_id, span_id, kind, payload_state, ingested_at FROM trace_artifacts
           WHERE ${t.sql} AND trace_id = {trace_id:String}
             AND span_id IN (SELECT span_id FROM trace_spans WHERE ${where})
           ORDER BY ingested_at DESC LIMIT 1 BY project_id, trace_id, artifact_id)
         ORDER BY span_id, kind, artifact_id`,
        params,
      ),
    ]);
    toolSpans = spans.map((x) => ({
      span_id: String(x.span_id),
      parent_span_id: String(x.parent_span_id ?? ''),
      span_name: String(x.span_name),
      tool_name: String(x.tool_name ?? ''),
      status: String(x.status),
      started_at: rfc3339(x.started_at),
      duration_ms: Number(x.duration_ms ?? 0),
      payload_state: String(x.payload_state),
      artifacts: artifacts
        .filter((r) => r.span_id === x.span_id)
        .map((r) => ({
          artifact_id: String(r.artifact_id),
          kind: String(r.kind),
          payload_state: String(r.payload_state),
          metadata_url: artifactPath(s.orgId, traceId, String(r.artifact_id)),
        })),
    }));
  }
  return {
    ...base,
    full_tool_trace: {
      trace_id: traceId,
      tool_spans: toolSpans,
      response_body_url: info.body_urls?.response ?? null,
    },
  };
};
