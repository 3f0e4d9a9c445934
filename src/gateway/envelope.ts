import { attributionUsage, pricingFields } from '../events/envelopes/from-pricing.js';
import type { RequestBegun } from '../events/envelopes/interrupted.js';
import type { RecordBodies, RequestCompletedDraft } from '../events/envelopes/record.js';
import type { Attempt, RequestUsage, UsageLine } from '../events/envelopes/request-completed.js';
import { readOptionalCount } from '../pricing/index.js';
import type { CompletedRequest } from './completed.js';
import type { AttemptRecord } from './pipeline.js';

/** retried when the same candidate came next, fell_back when another did, failed when none did. */
const attemptsOf = (records: readonly AttemptRecord[]): Attempt[] =>
  records.map((a, i) => {
    const next = records[i + 1];
    const outcome =
      a.outcome === 'success'
        ? 'success'
        : !next
          ? 'failed'
          : next.source === a.source
            ? 'retried'
            : 'fell_back';
    return {
      source: a.source,
      kind: a.kind,
      status_code: a.status_code,
      message: a.message,
      provider: a.provider,
      endpoint_id: a.source,
      latency_ms: a.latency_ms,
      outcome,
      upstream_request_id: a.upstream_request_id,
    };
  });

const declaredTools = (raw: Record<string, unknown>): string[] => {
  const tools = raw.tools;
  if (!Array.isArray(tools)) return [];
  const names: string[] = [];
  for (const t of tools) {
    const name =
      (t as { function?: { name?: unknown }; name?: unknown } | null)?.function?.name ??
      (t as { name?: unknown } | null)?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
};

/** The request.completed draft of a finished request (SPEC 2.5). */
export const envelopeOf = (c: CompletedRequest): { draft: RequestCompletedDraft; bodies?: RecordBodies } => {
  const u = c.usage;
  // Counters are stored as the upstream reported them when readable (SPEC 4.1 rule 10); an
  // unreadable one has already failed billing and is stored as 0, so the record stays valid.
  const prompt = readOptionalCount(u?.prompt_tokens) ?? 0;
  const completion = readOptionalCount(u?.completion_tokens) ?? 0;
  const cached = readOptionalCount(u?.prompt_tokens_details?.cached_tokens) ?? 0;
  const priced = c.pricing
    ? pricingFields(c.pricing)
    : { cost_lines: [], total_cost_usd: '0', billing: { status: 'priced' as const, rate_card_id: null } };
  const attribution = c.pricing
    ? attributionUsage(c.pricing)
    : {
        reasoning_tokens: null,
        audio_input_marker: 'not_reported' as const,
        audio_input_tokens: null,
        audio_output_marker: 'not_reported' as const,
        audio_output_tokens: null,
        has_audio: false,
      };
  const usage: RequestUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: readOptionalCount(u?.total_tokens) ?? prompt + completion,
    cache_read_tokens: cached,
    cache_write_tokens: readOptionalCount(u?.prompt_tokens_details?.cache_write_tokens) ?? 0,
    ...attribution,
    input_image_tokens: null,
    output_image_tokens: null,
  };
  const usageLines: UsageLine[] = priced.cost_lines.length
    ? priced.cost_lines.map((l) => ({
        meter: l.meter,
        modality: l.modality,
        tier: l.tier,
        cache_ttl: l.cache_ttl,
        tool_type: l.tool_type,
        quantity: l.quantity,
      }))
    : u
      ? [
          {
            meter: 'input_token',
            modality: 'text',
            tier: 'standard',
            cache_ttl: null,
            tool_type: null,
            quantity: Math.max(0, prompt - cached),
          },
          {
            meter: 'output_token',
            modality: 'text',
            tier: 'standard',
            cache_ttl: null,
            tool_type: null,
            quantity: completion,
          },
        ]
      : [];
  // Written out, not spread from a shared identity object: a literal that opens with a spread and
  // then adds fields takes V8's slow path, about 1 µs a field on this machine, twice per request.
  const draft: RequestCompletedDraft = {
    request_id: c.requestId,
    org_id: c.key.orgId,
    project_id: c.key.projectId,
    workspace_id: c.key.workspaceId,
    api_key_id: c.key.apiKeyId,
    route: c.request.route,
    model_requested: c.request.model,
    model_served: c.modelServed,
    provider: c.provider,
    endpoint_id: c.provider && c.modelServed ? `${c.provider}/${c.modelServed}` : null,
    provider_model_id: c.providerModelId,
    stream: c.request.stream,
    status: c.status,
    http_status: Math.min(599, Math.max(100, c.httpStatus)),
    error: c.status === 'error' ? { type: c.errorType ?? 'api_error', code: c.errorCode } : null,
    started_at: c.startedAt.toISOString(),
    finished_at: c.finishedAt.toISOString(),
    latency_ms: c.finishedAt.getTime() - c.startedAt.getTime(),
    ttfb_ms: c.ttfbMs,
    attempts: attemptsOf(c.attempts),
    usage,
    usage_lines: usageLines,
    ...priced,
    funding: c.funding,
    session_id: c.sessionId,
    end_user_id: c.request.endUserId ?? null,
    ...(c.request.preserved?.beta ? { alt_beta: c.request.preserved.beta } : {}),
    trace: c.traceContext
      ? {
          full_tracing: c.tracing.full,
          source: c.tracing.source,
          trace_id: c.traceContext.traceId,
          span_id: c.traceContext.spanId,
          parent_span_id: c.traceContext.parentSpanId,
        }
      : { full_tracing: c.tracing.full, source: c.tracing.source },
    tool_summary: {
      declared: declaredTools(c.request.raw),
      calls: Object.entries(c.toolSummary).map(([name, count]) => ({ name, count })),
    },
    ...(c.policy ? { policy: c.policy } : {}),
  };
  if (!c.bodies) return { draft };
  return {
    draft,
    bodies: { request: c.bodies.request, ...(c.bodies.response ? { response: c.bodies.response } : {}) },
  };
};

/**
 * What the request journal keeps of a request whose upstream call is about to begin (SPEC 2.5): it
 * opens with the same identity fields as the record.
 */
export const begunOf = (c: CompletedRequest): RequestBegun => ({
  request_id: c.requestId,
  org_id: c.key.orgId,
  project_id: c.key.projectId,
  workspace_id: c.key.workspaceId,
  api_key_id: c.key.apiKeyId,
  route: c.request.route,
  model_requested: c.request.model,
  stream: c.request.stream,
  started_at: c.startedAt.toISOString(),
  session_id: c.sessionId,
  end_user_id: c.request.endUserId ?? null,
  ...(c.request.preserved?.beta ? { alt_beta: c.request.preserved.beta } : {}),
  trace: { full_tracing: c.tracing.full, source: c.tracing.source },
  declared_tools: declaredTools(c.request.raw),
});
