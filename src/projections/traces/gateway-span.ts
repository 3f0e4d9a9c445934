import { createHash } from 'node:crypto';
import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import type {
  ArtifactKind,
  TraceArtifactRecord,
  TraceEventRecord,
  TraceRecord,
  TraceSpanRecord,
} from '../../traces/model.js';

/**
 * The gateway's own LLM span (SPEC 4.3, 6 "gateway-owned producers"; 2.1 request_id): a request
 * that belongs to a trace (its envelope names a trace id: the caller sent a traceparent, or a
 * session) becomes one span of that trace, joined by request_id to its request row, with model,
 * provider, token counts and cost promoted. It is derived by the ingest worker from the
 * request.completed envelope it already reads, so tracing adds nothing to the request path.
 *
 * Payloads follow the capture rules of SPEC 1.10 and 2.3: the request and response bodies are the
 * span's input and output artifacts; with full tracing they are the bodies the ingest stored in the
 * request's body pack (object_key `request:<request_id>:req|res`, byte count and blake3 from the
 * envelope), otherwise summary_only refs with no key, no hash and no text. The span's attributes
 * never hold a body, a message or an attempt's upstream message.
 */

export const GATEWAY_SERVICE_NAME = 'svc-gateway';

const stableId = (...parts: string[]) =>
  createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);

/** `2026-11-24T10:00:00.123Z` (the envelope's milliseconds) with nanosecond digits. */
const nanos = (iso: string): string => {
  const t = new Date(iso);
  const base = t.toISOString();
  return `${base.slice(0, 23)}000000Z`;
};

/** The request's product family for llm.system, from the route it came in on. */
const systemOf = (route: string): string => (route.startsWith('/alt/') ? 'anthropic' : 'openai');

export const gatewaySpanRecords = (e: RequestCompleted): TraceRecord[] => {
  const t = e.trace;
  if (!t.trace_id || !t.span_id) return [];
  const traceId = t.trace_id;
  const spanId = t.span_id;
  const base = { trace_id: traceId, span_id: spanId, org_id: e.org_id, project_id: e.project_id };
  const sessionId = e.session_id ?? '';
  const started = nanos(e.started_at);
  const ended = nanos(e.finished_at);
  const model = e.model_served ?? e.model_requested;
  const failed = e.attempts.filter((a) => a.outcome !== 'success');
  const full = t.full_tracing;

  const artifact = (kind: ArtifactKind, side: 'req' | 'res'): TraceArtifactRecord => {
    const ref = side === 'req' ? e.bodies?.request : e.bodies?.response;
    const stored = full && ref !== undefined;
    return {
      record: 'artifact',
      artifact_id: stableId(e.org_id, e.project_id, traceId, spanId, 'gateway', side),
      ...base,
      kind,
      object_key: stored ? `request:${e.request_id}:${side}` : '',
      mime_type: side === 'res' && e.stream ? 'text/event-stream' : 'application/json',
      compression: 'none',
      byte_count: stored ? ref.byte_count : 0,
      blake3_hash: stored ? ref.blake3 : '',
      payload_state: stored ? 'full' : 'summary_only',
      redaction_metadata_json: JSON.stringify(
        stored
          ? { source: 'request_body', side }
          : { source: 'request_body', side, reason: full ? 'not_recorded' : 'capture_disabled' },
      ),
    };
  };
  const artifacts = [artifact('input', 'req'), artifact('output', 'res')];

  const attributes: Record<string, unknown> = {
    'openinference.span.kind': 'LLM',
    'llm.model_name': model,
    'llm.provider': e.provider ?? '',
    'llm.system': systemOf(e.route),
    'llm.token_count.prompt': e.usage.prompt_tokens,
    'llm.token_count.completion': e.usage.completion_tokens,
    'llm.token_count.total': e.usage.total_tokens,
    'llm.cost.total': e.total_cost_usd,
    'gen_ai.request.model': e.model_requested,
    'svc.request_id': e.request_id,
    'svc.route': e.route,
    'svc.stream': e.stream,
    'svc.http_status': e.http_status,
    'svc.billing_status': e.billing.status,
    'svc.attempts': e.attempts.length,
    'svc.trace_source': 'gateway',
    'svc.full_tracing': full,
    ...(e.endpoint_id ? { 'svc.endpoint_id': e.endpoint_id } : {}),
    ...(sessionId ? { 'session.id': sessionId } : {}),
    ...(e.end_user_id ? { 'user.id': e.end_user_id } : {}),
    ...(e.error ? { 'svc.error.type': e.error.type, 'svc.error.code': e.error.code ?? '' } : {}),
    ...(e.tool_summary.calls.length > 0
      ? { 'svc.tool_calls': Object.fromEntries(e.tool_summary.calls.map((c) => [c.name, c.count])) }
      : {}),
  };

  const span: TraceSpanRecord = {
    record: 'span',
    ...base,
    parent_span_id: t.parent_span_id ?? '',
    session_id: sessionId,
    request_id: e.request_id,
    span_name: `svc.gateway ${e.route}`,
    span_kind: 'server',
    openinference_span_kind: 'LLM',
    service_name: GATEWAY_SERVICE_NAME,
    source: 'gateway',
    started_at: started,
    ended_at: ended,
    duration_ms: e.latency_ms,
    status: e.status === 'success' ? 'ok' : 'error',
    status_message: e.error ? (e.error.code ?? e.error.type) : '',
    attributes_json: JSON.stringify(attributes),
    payload_state: artifacts.some((a) => a.payload_state === 'full') ? 'full' : 'summary_only',
    model_name: model,
    provider: e.provider ?? '',
    llm_system: systemOf(e.route),
    prompt_tokens: e.usage.prompt_tokens,
    completion_tokens: e.usage.completion_tokens,
    cost_total: e.total_cost_usd,
    tool_name: '',
    agent_name: '',
    user_id: e.end_user_id ?? '',
    classification: '',
    trace_source: 'gateway',
  };

  const event = (
    name: string,
    at: string,
    attrs: Record<string, unknown>,
    key: string,
  ): TraceEventRecord => ({
    record: 'event',
    event_id: stableId(e.org_id, e.project_id, traceId, spanId, key),
    ...base,
    session_id: sessionId,
    event_name: name,
    occurred_at: at,
    level: name === 'gateway.attempt.failed' ? 'warn' : '',
    message: '',
    attributes_json: JSON.stringify(attrs),
    artifact_ref: '',
  });
  const events = [
    event('trace.span.started', started, {}, 'started'),
    // Failed attempts by provider, kind and status; their upstream messages stay on the request row.
    ...failed.map((a, i) =>
      event(
        'gateway.attempt.failed',
        ended,
        {
          provider: a.provider,
          endpoint_id: a.endpoint_id,
          kind: a.kind,
          status_code: a.status_code,
          outcome: a.outcome,
        },
        `attempt:${i}`,
      ),
    ),
    event('trace.span.ended', ended, { status: span.status, duration_ms: span.duration_ms }, 'ended'),
  ];
  return [span, ...artifacts, ...events];
};
