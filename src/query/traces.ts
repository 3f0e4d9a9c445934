import type { AnalyticsStore, QueryParams } from '../analytics/port.js';
import { type RawRow, shapeRequest } from './requests.js';
import { int } from './window.js';

/**
 * Trace reads (SPEC 2.1-2.3, 2.12, 4.5) over migrations/clickhouse/0003_traces.sql.
 *
 * Every table may hold a record several times (redelivery, re-export, a pending span written again
 * when it ends), and a merge may not have run: every read picks one row per id itself, the span
 * with the highest `version` (a complete span outranks its pending copy) and the latest-ingested
 * event or artifact, never FINAL alone. Every read is bound to one organization (and to the
 * caller's project when the credential is project-bound), so an id of another tenant reads as
 * unknown.
 *
 * The tree (GET /api/traces/:trace_id/tree):
 *   { trace_id, org_id,
 *     spans: [ span... ]            sorted by (started_at, span_id); each span is the SPEC 2.1
 *                                   record with attributes_json parsed into `attributes`, plus
 *                                   `events` (by occurred_at, event_id), `artifacts` (SPEC 2.3 refs
 *                                   by kind, artifact_id) and `request` (the request row's metadata
 *                                   for a span with a request_id, else null),
 *     span_count, started_at (earliest start), ended_at (latest end),
 *     root_span_ids                 spans with no parent in this trace: an empty parent, or one
 *                                   that has not arrived (yet), so a partial trace still renders,
 *     full_trace_available          any span or artifact with payload_state full,
 *     truncated                     true when the trace has more than MAX_TREE_SPANS spans }
 * Timestamps are RFC 3339 UTC with the nanoseconds the record carries.
 */

export interface TraceScope {
  orgId: string;
  projectId: string | null;
}

/** A trace larger than this is answered with its first spans and `truncated: true`. */
export const MAX_TREE_SPANS = 10_000;
const MAX_TREE_EVENTS = 50_000;

export const SPAN_COLUMNS = `trace_id, span_id, parent_span_id, org_id, project_id, session_id, request_id,
  span_name, span_kind, openinference_span_kind, service_name, source, started_at, ended_at, duration_ms,
  status, status_message, attributes_json, payload_state, model_name, provider, llm_system, prompt_tokens,
  completion_tokens, cost_total, tool_name, agent_name, user_id, classification, trace_source`;

export const EVENT_COLUMNS = `event_id, trace_id, span_id, org_id, project_id, session_id, event_name,
  occurred_at, level, message, attributes_json, artifact_ref`;

const ARTIFACT_COLUMNS = `artifact_id, trace_id, span_id, org_id, project_id, kind, object_key, mime_type,
  compression, byte_count, blake3_hash, payload_state, redaction_metadata_json`;

/** The request row's metadata joined onto a span (SPEC 2.12); body refs stay internal. */
const REQUEST_META_COLUMNS = `request_id, project_id, route, model_requested, model_served, provider, stream,
  status, http_status, error_type, error_code, prompt_tokens, completion_tokens, total_tokens,
  reasoning_tokens, total_cost_usd, billing_status, latency_ms, ttfb_ms, started_at, finished_at,
  full_tracing, session_id, tool_call_count`;

/** `org_id = {org}` and, for a project-bound caller, `project_id = {project}`. */
export const traceTenant = (s: TraceScope): { sql: string; params: QueryParams } => ({
  sql: s.projectId ? 'org_id = {org:String} AND project_id = {project:String}' : 'org_id = {org:String}',
  params: s.projectId ? { org: s.orgId, project: s.projectId } : { org: s.orgId },
});

/** One row per span (highest version) matching `where`, sorted by start then span id. */
export const spansSql = (where: string, limit = 'LIMIT {limit:UInt32}') =>
  `SELECT ${SPAN_COLUMNS} FROM (
     SELECT ${SPAN_COLUMNS}, version FROM trace_spans WHERE ${where}
     ORDER BY version DESC LIMIT 1 BY project_id, trace_id, span_id)
   ORDER BY started_at, span_id ${limit}`;

const eventsSql = (where: string) =>
  `SELECT ${EVENT_COLUMNS} FROM (
     SELECT ${EVENT_COLUMNS}, ingested_at FROM trace_events WHERE ${where}
     ORDER BY ingested_at DESC LIMIT 1 BY project_id, trace_id, event_id)
   ORDER BY occurred_at, event_id LIMIT ${MAX_TREE_EVENTS}`;

const artifactsSql = (where: string) =>
  `SELECT ${ARTIFACT_COLUMNS} FROM (
     SELECT ${ARTIFACT_COLUMNS}, ingested_at FROM trace_artifacts WHERE ${where}
     ORDER BY ingested_at DESC LIMIT 1 BY project_id, trace_id, artifact_id)
   ORDER BY span_id, kind, artifact_id`;

/** The engine's `YYYY-MM-DD hh:mm:ss.fffffffff` UTC text as RFC 3339. */
export const rfc3339 = (v: unknown): string =>
  typeof v === 'string' && v.length >= 19 && v[10] === ' ' ? `${v.replace(' ', 'T')}Z` : String(v ?? '');

/** A stored JSON object; a value that is not one reads as empty rather than failing the answer. */
export const parseObject = (text: unknown): Record<string, unknown> => {
  try {
    const v = JSON.parse(String(text ?? ''));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
};

const nullableInt = (v: unknown): number | null => (v === null || v === undefined ? null : int(v));

/** A span as the routes answer it: the SPEC 2.1 record, attributes parsed. */
export interface SpanRecord extends RawRow {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  span_name: string;
  openinference_span_kind: string;
  status: string;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  request_id: string;
  payload_state: string;
  attributes: Record<string, unknown>;
}

/** A span with its events, artifact refs and joined request metadata. */
export interface SpanNode extends SpanRecord {
  events: RawRow[];
  artifacts: RawRow[];
  request: RawRow | null;
}

export const shapeSpan = (r: RawRow): SpanRecord => {
  const { attributes_json, ...rest } = r;
  return {
    ...rest,
    trace_id: String(r.trace_id),
    span_id: String(r.span_id),
    parent_span_id: String(r.parent_span_id ?? ''),
    span_name: String(r.span_name ?? ''),
    openinference_span_kind: String(r.openinference_span_kind ?? ''),
    status: String(r.status ?? ''),
    request_id: String(r.request_id ?? ''),
    payload_state: String(r.payload_state ?? ''),
    started_at: rfc3339(r.started_at),
    ended_at: rfc3339(r.ended_at),
    duration_ms: Number(r.duration_ms ?? 0),
    prompt_tokens: nullableInt(r.prompt_tokens),
    completion_tokens: nullableInt(r.completion_tokens),
    attributes: parseObject(attributes_json),
  };
};

export const shapeEvent = (r: RawRow): RawRow => {
  const { attributes_json, ...rest } = r;
  return { ...rest, occurred_at: rfc3339(r.occurred_at), attributes: parseObject(attributes_json) };
};

export const shapeArtifact = (r: RawRow): RawRow => {
  const { redaction_metadata_json, ...rest } = r;
  return { ...rest, byte_count: int(r.byte_count), redaction_metadata: parseObject(redaction_metadata_json) };
};

const sameProject = (row: RawRow | undefined, projectId: unknown): RawRow | null =>
  row !== undefined && row.project_id === projectId ? row : null;

/** Request metadata by request id, one row per id (FINAL, then the latest copy), in the tenant. */
export const requestMetadata = async (
  a: AnalyticsStore,
  s: TraceScope,
  requestIds: readonly string[],
): Promise<Map<string, RawRow>> => {
  const out = new Map<string, RawRow>();
  if (requestIds.length === 0) return out;
  const t = traceTenant(s);
  const rows = await a.query(
    `SELECT ${REQUEST_META_COLUMNS} FROM requests FINAL
     WHERE ${t.sql} AND request_id IN {request_ids:Array(String)}
     ORDER BY ingested_at DESC LIMIT 1 BY request_id`,
    { ...t.params, request_ids: [...new Set(requestIds)] },
  );
  for (const r of rows) {
    const shaped = shapeRequest(r);
    shaped.latency_ms = Number(r.latency_ms ?? 0);
    shaped.ttfb_ms = r.ttfb_ms === null || r.ttfb_ms === undefined ? null : Number(r.ttfb_ms);
    shaped.tool_call_count = int(r.tool_call_count);
    out.set(String(r.request_id), shaped);
  }
  return out;
};

/** Spans with their events, artifacts and request rows joined on, in span order. */
const assemble = async (
  a: AnalyticsStore,
  s: TraceScope,
  spanRows: RawRow[],
  eventRows: RawRow[],
  artifactRows: RawRow[],
): Promise<SpanNode[]> => {
  const spans = spanRows.map(shapeSpan);
  const requests = await requestMetadata(
    a,
    s,
    spans.map((x) => x.request_id).filter((id) => id !== ''),
  );
  const bySpan = <T extends RawRow>(rows: T[]) => {
    const m = new Map<string, T[]>();
    for (const r of rows) {
      const k = `${String(r.project_id)}\u0000${String(r.span_id)}`;
      m.set(k, [...(m.get(k) ?? []), r]);
    }
    return m;
  };
  const events = bySpan(eventRows.map(shapeEvent));
  const artifacts = bySpan(artifactRows.map(shapeArtifact));
  return spans.map((span) => ({
    ...span,
    // A span's own project's records only: two projects may send the same ids.
    events: events.get(`${span.project_id}\u0000${span.span_id}`) ?? [],
    artifacts: artifacts.get(`${span.project_id}\u0000${span.span_id}`) ?? [],
    // Only a request of the span's own project: a span of another project cannot claim it.
    request: span.request_id ? sameProject(requests.get(span.request_id), span.project_id) : null,
  }));
};

export interface TraceTree {
  trace_id: string;
  org_id: string;
  spans: SpanNode[];
  span_count: number;
  started_at: string;
  ended_at: string;
  root_span_ids: string[];
  full_trace_available: boolean;
  truncated: boolean;
}

/** The trace's tree, or null when no span of the tenant has that trace id. */
export const traceTree = async (
  a: AnalyticsStore,
  s: TraceScope,
  traceId: string,
): Promise<TraceTree | null> => {
  const t = traceTenant(s);
  const where = `${t.sql} AND trace_id = {trace_id:String}`;
  const params = { ...t.params, trace_id: traceId };
  const [spanRows, eventRows, artifactRows] = await Promise.all([
    a.query(spansSql(where), { ...params, limit: MAX_TREE_SPANS + 1 }),
    a.query(eventsSql(where), params),
    a.query(artifactsSql(where), params),
  ]);
  if (spanRows.length === 0) return null;
  const truncated = spanRows.length > MAX_TREE_SPANS;
  const spans = await assemble(a, s, spanRows.slice(0, MAX_TREE_SPANS), eventRows, artifactRows);
  const ids = new Set(spans.map((x) => x.span_id));
  // Fixed-width RFC 3339 text (nine fraction digits): the lexical order is the time order.
  const ends = spans.map((x) => x.ended_at).sort();
  return {
    trace_id: traceId,
    org_id: s.orgId,
    spans,
    span_count: spans.length,
    started_at: spans[0]!.started_at,
    ended_at: ends[ends.length - 1]!,
    root_span_ids: spans
      .filter((x) => x.parent_span_id === '' || !ids.has(x.parent_span_id))
      .map((x) => x.span_id),
    full_trace_available:
      spans.some((x) => x.payload_state === 'full') || artifactRows.some((r) => r.payload_state === 'full'),
    truncated,
  };
};

/** One span with its events, artifact refs and request metadata; null when not in the tenant. */
export const spanDetail = async (
  a: AnalyticsStore,
  s: TraceScope,
  traceId: string,
  spanId: string,
): Promise<SpanNode | null> => {
  const t = traceTenant(s);
  const where = `${t.sql} AND trace_id = {trace_id:String} AND span_id = {span_id:String}`;
  const params = { ...t.params, trace_id: traceId, span_id: spanId };
  const [spanRows, eventRows, artifactRows] = await Promise.all([
    a.query(spansSql(where, 'LIMIT 1'), params),
    a.query(eventsSql(where), params),
    a.query(artifactsSql(where), params),
  ]);
  if (spanRows.length === 0) return null;
  return (await assemble(a, s, spanRows, eventRows, artifactRows))[0] ?? null;
};

/** One artifact ref as stored (object_key included); null when not in the tenant. */
export const findArtifact = async (
  a: AnalyticsStore,
  s: TraceScope,
  traceId: string,
  artifactId: string,
): Promise<RawRow | null> => {
  const t = traceTenant(s);
  const rows = await a.query(
    artifactsSql(`${t.sql} AND trace_id = {trace_id:String} AND artifact_id = {artifact_id:String}`),
    { ...t.params, trace_id: traceId, artifact_id: artifactId },
  );
  return rows[0] ? shapeArtifact(rows[0]) : null;
};

/**
 * Spans that carry `requestId`, the gateway's LLM span first (an SDK's own span may carry the same
 * id as a promoted attribute); each once, at most `limit`.
 */
export const spansOfRequest = async (
  a: AnalyticsStore,
  s: TraceScope,
  requestIds: readonly string[],
  limit = 100,
): Promise<RawRow[]> => {
  if (requestIds.length === 0) return [];
  const t = traceTenant(s);
  return a.query(
    `SELECT trace_id, span_id, request_id, openinference_span_kind, source, started_at FROM (
       SELECT trace_id, span_id, request_id, openinference_span_kind, source, started_at, version FROM trace_spans
       WHERE ${t.sql} AND request_id IN {request_ids:Array(String)}
         -- A span names a request of its own project only; another project's span cannot claim it.
         AND (project_id, request_id) IN (
           SELECT project_id, request_id FROM requests WHERE ${t.sql} AND request_id IN {request_ids:Array(String)})
       ORDER BY version DESC LIMIT 1 BY project_id, trace_id, span_id)
     ORDER BY request_id, openinference_span_kind = 'LLM' DESC, source = 'gateway' DESC, started_at, span_id
     LIMIT {limit:UInt32}`,
    { ...t.params, request_ids: [...new Set(requestIds)], limit },
  );
};

/** The trace holding the LLM span of `requestId`, or null. */
export const requestTraceTree = async (
  a: AnalyticsStore,
  s: TraceScope,
  requestId: string,
): Promise<TraceTree | null> => {
  const [span] = await spansOfRequest(a, s, [requestId], 1);
  return span ? traceTree(a, s, String(span.trace_id)) : null;
};
