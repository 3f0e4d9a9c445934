import { z } from 'zod';
import {
  BILLING_REASONS,
  type CostLine,
  METERS,
  MODALITIES,
  type RateProvenance,
} from '../../pricing/types.js';

/**
 * The request.completed envelope (SPEC 2.5, 6): one JSON message per served or
 * failed gateway request on `svc.requests.<org_id>.<request_id>`, bus message id = request_id.
 * The gateway produces it; the ingest consumer parses it with `requestCompletedSchema` (STYLE 3).
 *
 * Fields (snake_case, the wire's and the analytics tables' spelling):
 * - schema_version: 1. A breaking change is a new version that ingest accepts beside the old one;
 *   unknown keys are stripped rather than refused so an additive field never dead-letters.
 * - request_id, org_id, project_id, workspace_id, api_key_id: identity and tenancy.
 * - route: the edge path (`/v1/chat/completions`, ...); stream: whether the caller asked to stream.
 * - model_requested: the selector as the caller wrote it (SPEC 4.1 rule 1). model_served, provider
 *   (the lane, e.g. `openai`), endpoint_id and provider_model_id describe the candidate that
 *   answered; null when no attempt was made (rejected before dispatch).
 * - status, http_status, error {type, code}: the outcome the caller saw; error is null on success.
 *   `interrupted`: the upstream call began and the gateway process died before the request ended
 *   (written from the gateway's journal by the next start, journal.ts); http_status 500, error
 *   code `interrupted`, no usage, billing failed with reason `interrupted` (not charged).
 * - started_at, finished_at: RFC 3339 with milliseconds. latency_ms: whole request. ttfb_ms: first
 *   byte sent to the caller; null when nothing was sent.
 * - attempts: the attempt trail, SPEC 2.4 entries (source, kind, status_code, message) plus
 *   provider, endpoint_id, latency_ms, outcome and the upstream's own request id (null when it sent
 *   none); kind and message are null on the attempt that served the reply.
 * - usage: normalized counters stored whatever the billing outcome; audio counters carry the SPEC 3
 *   marker, and tokens only when the marker is `reported`.
 * - usage_lines: metered quantities by meter and qualifiers; cost_lines: the pricing engine's
 *   CostLine (exact decimal strings, rate-card provenance); total_cost_usd: their exact sum.
 * - billing: priced, or failed with the reason and detail (served and not charged, SPEC 7.6 rule 2).
 *   A request with nothing billable (rejected, or failed before usage) is priced with no lines.
 * - funding: byok or wallet; null when no credential was resolved.
 * - session_id, end_user_id: caller-supplied grouping keys, null when absent.
 * - alt_beta: the alt-beta header an alternate-dialect request carried (recorded, SPEC 4.2 rule 8).
 * - trace: whether full tracing was on and which setting turned it on (SPEC 1.10); and, for a request
 *   that belongs to a trace, its trace id and the gateway's span id and parent (SPEC 4.3).
 * - tool_summary: declared tool names and call counts by name, never arguments or results.
 * - bodies: present only with full tracing; each side inline up to 256 KB or chunked by reference.
 * - policy: the policies that decided the request and their verdict; absent when none applied.
 */

export const REQUEST_COMPLETED_SCHEMA_VERSION = 1;

/** SPEC 8: a body up to this many bytes travels inside the envelope; a larger one is chunked. */
export const INLINE_BODY_MAX_BYTES = 256 * 1024;

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const millis = z.number().nonnegative().finite();
const instant = z.iso.datetime({ precision: 3, offset: true });
const id = z.string().min(1).max(256);
/** Money and prices: a plain decimal, as `formatUsd` writes it; never a JSON number (STYLE 9). */
const decimal = z
  .string()
  .max(80)
  .regex(/^-?\d+(\.\d+)?$/);
const blake3Hex = z.string().regex(/^[0-9a-f]{64}$/);

export const ATTEMPT_KINDS = [
  'MissingProviderKey',
  'UpstreamStatus',
  'UpstreamError',
  'Timeout',
  'ResponseTooLarge',
  'Internal',
] as const;

/** retried: the same candidate is tried again; fell_back: the next candidate is tried. */
export const ATTEMPT_OUTCOMES = ['success', 'retried', 'fell_back', 'failed'] as const;

export const attemptSchema = z.object({
  source: z.string(),
  kind: z.enum(ATTEMPT_KINDS).nullable(),
  status_code: z.number().int().min(100).max(599).nullable(),
  message: z.string().nullable(),
  provider: z.string(),
  endpoint_id: z.string(),
  latency_ms: millis,
  outcome: z.enum(ATTEMPT_OUTCOMES),
  /** The upstream's id of its answer (x-request-id, request-id, x-amzn-requestid, apim-request-id). */
  upstream_request_id: z.string().max(128).nullable().optional(),
});

export const AUDIO_MARKERS = ['reported', 'not_reported', 'unreadable'] as const;

export const usageSchema = z.object({
  prompt_tokens: count,
  completion_tokens: count,
  total_tokens: count,
  cache_read_tokens: count,
  /** Summed over TTLs; the split by TTL is in usage_lines. */
  cache_write_tokens: count,
  /** Attribution only, never a cost line (SPEC 4.1 rule 9); null when the provider did not say. */
  reasoning_tokens: count.nullable(),
  audio_input_marker: z.enum(AUDIO_MARKERS),
  audio_input_tokens: count.nullable(),
  audio_output_marker: z.enum(AUDIO_MARKERS),
  audio_output_tokens: count.nullable(),
  /** The request carried audio (an input_audio part, or audio output asked for). */
  has_audio: z.boolean(),
  input_image_tokens: count.nullable(),
  output_image_tokens: count.nullable(),
});

const qualifiers = {
  meter: z.enum(METERS),
  modality: z.enum(MODALITIES),
  tier: z.string(),
  cache_ttl: z.string().nullable(),
  tool_type: z.string().nullable(),
};

export const usageLineSchema = z.object({ ...qualifiers, quantity: count });

const provenanceSchema: z.ZodType<RateProvenance> = z.discriminatedUnion('source', [
  z.object({
    source: z.literal('rate_card'),
    rate_card_id: z.string(),
    rate_row_id: z.string(),
    revision: count,
    effective_from: z.string(),
    effective_to: z.string().nullable(),
  }),
  z.object({ source: z.literal('zero_rated'), rule: z.enum(['moderations', 'count_tokens']) }),
]);

/** Typed against the pricing module so the engine's lines go onto the wire unchanged. */
export const costLineSchema: z.ZodType<CostLine> = z.object({
  ...qualifiers,
  quantity: count,
  unit_price: decimal,
  amount: decimal,
  estimated: z.boolean(),
  provenance: provenanceSchema,
});

export const billingSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('priced'), rate_card_id: z.string().nullable() }),
  z.object({
    status: z.literal('failed'),
    reason: z.enum(BILLING_REASONS),
    detail: z.string(),
    rate_card_id: z.string().nullable(),
  }),
]);

export const TRACE_SOURCES = ['org', 'project', 'api_key', 'header', 'none'] as const;

const hex = (digits: number) => z.string().regex(new RegExp(`^[0-9a-f]{${digits}}$`));

export const traceFlagsSchema = z.object({
  full_tracing: z.boolean(),
  source: z.enum(TRACE_SOURCES),
  /**
   * The trace the request belongs to (SPEC 4.3, 6: the gateway's own LLM span), present when the
   * caller sent a W3C traceparent or a session id: trace_id, the gateway span's own span_id, and
   * parent_span_id, the caller's span ('' when the trace began at the gateway).
   */
  trace_id: hex(32).optional(),
  span_id: hex(16).optional(),
  parent_span_id: z.union([hex(16), z.literal('')]).optional(),
});

export const toolSummarySchema = z.object({
  declared: z.array(z.string()),
  calls: z.array(z.object({ name: z.string(), count: count })),
});

export const inlineBodySchema = z.object({
  /** utf8 when the bytes are valid UTF-8 and no larger escaped than in base64; else base64. */
  encoding: z.enum(['utf8', 'base64']),
  data: z.string(),
  byte_count: count.max(INLINE_BODY_MAX_BYTES),
  blake3: blake3Hex,
});

export const chunkedBodySchema = z.object({
  /** Chunk n is on `<subject_prefix>.<n>`, n = 0 .. chunks-1; their bytes concatenate to the body. */
  chunks: z.number().int().positive(),
  byte_count: count,
  blake3: blake3Hex,
  subject_prefix: z.string(),
});

export const bodyRefSchema = z.union([inlineBodySchema, chunkedBodySchema]);

export const requestCompletedSchema = z
  .object({
    schema_version: z.literal(REQUEST_COMPLETED_SCHEMA_VERSION),
    request_id: id,
    org_id: id,
    project_id: id,
    workspace_id: id,
    api_key_id: id,
    route: z.string(),
    model_requested: z.string(),
    model_served: z.string().nullable(),
    provider: z.string().nullable(),
    endpoint_id: z.string().nullable(),
    provider_model_id: z.string().nullable(),
    stream: z.boolean(),
    status: z.enum(['success', 'error', 'interrupted']),
    http_status: z.number().int().min(100).max(599),
    error: z.object({ type: z.string(), code: z.string().nullable() }).nullable(),
    started_at: instant,
    finished_at: instant,
    latency_ms: millis,
    ttfb_ms: millis.nullable(),
    attempts: z.array(attemptSchema),
    usage: usageSchema,
    usage_lines: z.array(usageLineSchema),
    cost_lines: z.array(costLineSchema),
    total_cost_usd: decimal,
    billing: billingSchema,
    funding: z.enum(['byok', 'wallet']).nullable(),
    session_id: z.string().nullable(),
    end_user_id: z.string().nullable(),
    /** The alt-beta header of an alternate-dialect request, as received (SPEC 4.2 rule 8); absent otherwise. */
    alt_beta: z.string().nullable().optional(),
    trace: traceFlagsSchema,
    tool_summary: toolSummarySchema,
    bodies: z.object({ request: bodyRefSchema.optional(), response: bodyRefSchema.optional() }).optional(),
    /**
     * The policies that decided the request (SPEC 1.9): their versions (`scope:id@revision`, joined
     * by commas; `unavailable` when the policy service failed open) and the verdict code
     * (`allowed`, or the reason of a policy_denied). Absent when no policy applied.
     */
    policy: z
      .object({ version: z.string().min(1).max(2_000), decision: z.string().min(1).max(64) })
      .optional(),
  })
  .superRefine((e, ctx) => {
    // Bodies are the opt-in data class (SPEC 1.10): an envelope carrying them without full
    // tracing means a producer bug leaked payloads, and ingest must not store them.
    if (e.bodies && (e.bodies.request || e.bodies.response) && !e.trace.full_tracing)
      ctx.addIssue({ code: 'custom', path: ['bodies'], message: 'bodies without full tracing' });
    if (e.status !== 'success' && e.error === null)
      ctx.addIssue({ code: 'custom', path: ['error'], message: 'a failed request names its error' });
  });

export type RequestCompleted = z.infer<typeof requestCompletedSchema>;
export type Attempt = z.infer<typeof attemptSchema>;
export type AttemptKind = (typeof ATTEMPT_KINDS)[number];
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];
export type RequestUsage = z.infer<typeof usageSchema>;

/** The usage of a request no upstream reported on: every counter 0, every optional one unknown. */
export const NO_USAGE: Readonly<RequestUsage> = Object.freeze({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  reasoning_tokens: null,
  audio_input_marker: 'not_reported',
  audio_input_tokens: null,
  audio_output_marker: 'not_reported',
  audio_output_tokens: null,
  has_audio: false,
  input_image_tokens: null,
  output_image_tokens: null,
});
export type UsageLine = z.infer<typeof usageLineSchema>;
export type Billing = z.infer<typeof billingSchema>;
export type TraceFlags = z.infer<typeof traceFlagsSchema>;
export type TraceSource = (typeof TRACE_SOURCES)[number];
export type ToolSummary = z.infer<typeof toolSummarySchema>;
export type InlineBody = z.infer<typeof inlineBodySchema>;
export type ChunkedBody = z.infer<typeof chunkedBodySchema>;
export type BodyRef = z.infer<typeof bodyRefSchema>;
export type RequestBodies = NonNullable<RequestCompleted['bodies']>;

export const isChunkedBody = (ref: BodyRef): ref is ChunkedBody => 'chunks' in ref;
