/**
 * The trace vocabulary (SPEC 2.1-2.3, 3, 6): what an OTLP export decodes to, and the three record
 * kinds every trace producer writes (the trace-ingest service, and the ingest worker for the
 * gateway's own LLM spans). Pure types and constants: this folder imports nothing with I/O.
 */

/**
 * An attribute value after decoding, JSON-ready: OTLP AnyValue's string, bool and double as
 * themselves; int64 as a number when it is a safe integer, else its decimal string; bytes as
 * base64 text; arrays and key-value lists as JSON arrays and objects; an empty AnyValue as null.
 */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

/** One span as OTLP carries it (opentelemetry/proto/trace/v1/trace.proto), decoded. */
export interface OtlpSpan {
  /** Lowercase hex of the bytes as received (32 digits when valid; validity is the normalizer's call). */
  traceId: string;
  /** Lowercase hex, 16 digits when valid. */
  spanId: string;
  /** Lowercase hex; '' for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** Nanoseconds since the epoch; 0n when absent. */
  startTimeUnixNano: bigint;
  /** 0n while the span has not ended (a pending span). */
  endTimeUnixNano: bigint;
  attributes: Attributes;
  events: OtlpSpanEvent[];
  links: OtlpSpanLink[];
  /** StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
}

export interface OtlpSpanEvent {
  timeUnixNano: bigint;
  name: string;
  attributes: Attributes;
}

export interface OtlpSpanLink {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

export interface OtlpScopeSpans {
  scope: { name: string; version: string; attributes: Attributes };
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource: { attributes: Attributes };
  scopeSpans: OtlpScopeSpans[];
}

/** ExportTraceServiceRequest, decoded from protobuf or OTLP JSON. */
export interface OtlpExport {
  resourceSpans: OtlpResourceSpans[];
}

export const SPAN_STATUSES = ['ok', 'error', 'unset', 'pending'] as const;
export type SpanStatus = (typeof SPAN_STATUSES)[number];

export const PAYLOAD_STATES = ['summary_only', 'full', 'omitted', 'redacted'] as const;
export type PayloadState = (typeof PAYLOAD_STATES)[number];

export const SPAN_KINDS = ['internal', 'client', 'server', 'producer', 'consumer'] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];

export const OPENINFERENCE_KINDS = [
  'AGENT',
  'CHAIN',
  'LLM',
  'TOOL',
  'RETRIEVER',
  'RERANKER',
  'EMBEDDING',
  'GUARDRAIL',
  'PROMPT',
  'EVALUATOR',
] as const;
/** '' when no convention attribute names the kind. */
export type OpenInferenceKind = (typeof OPENINFERENCE_KINDS)[number] | '';

export const ARTIFACT_KINDS = [
  'input',
  'output',
  'tool_arguments',
  'tool_result',
  'retrieved_document',
  'image',
  'audio',
  'raw_provider_payload',
] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/** gateway: the gateway's own LLM span; trace-ingest: received over OTLP. */
export type TraceSource = 'gateway' | 'sdk' | 'trace-ingest' | 'integration';

/**
 * SPEC 2.1. Timestamps are RFC 3339 UTC with nanoseconds (`2026-11-24T10:00:00.123456789Z`).
 * The promoted fields are '' (strings) or null (numbers) when the span does not carry them.
 */
export interface TraceSpanRecord {
  record: 'span';
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  org_id: string;
  project_id: string;
  session_id: string;
  /** '' when the span is not a gateway-backed LLM span. */
  request_id: string;
  span_name: string;
  span_kind: SpanKind;
  openinference_span_kind: OpenInferenceKind;
  service_name: string;
  source: TraceSource;
  started_at: string;
  /** The start timestamp while pending. */
  ended_at: string;
  /** 0 while pending. */
  duration_ms: number;
  status: SpanStatus;
  status_message: string;
  /** JSON object of the normalized attributes after privacy filtering (resource attributes under `resource.`). */
  attributes_json: string;
  payload_state: PayloadState;
  // Promoted (SPEC 2.1 "Fields promoted from attributes when present", and the gen_ai.* equivalents).
  model_name: string;
  provider: string;
  llm_system: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** Exact decimal text as received; '' when absent. */
  cost_total: string;
  tool_name: string;
  agent_name: string;
  user_id: string;
  classification: string;
  trace_source: string;
}

/** SPEC 2.2. */
export interface TraceEventRecord {
  record: 'event';
  /** Stable: the same event exported again has the same id (live streams dedupe by it). */
  event_id: string;
  trace_id: string;
  span_id: string;
  org_id: string;
  project_id: string;
  session_id: string;
  /** trace.span.started, trace.span.ended, or the OTLP span event's own name. */
  event_name: string;
  occurred_at: string;
  level: string;
  message: string;
  attributes_json: string;
  /** '' when the event carries no artifact. */
  artifact_ref: string;
}

/** SPEC 2.3. */
export interface TraceArtifactRecord {
  record: 'artifact';
  /** Stable for the same attribute of the same span. */
  artifact_id: string;
  trace_id: string;
  span_id: string;
  org_id: string;
  project_id: string;
  kind: ArtifactKind;
  /** Relative to the organization in the object store; '' unless payload_state is full. */
  object_key: string;
  mime_type: string;
  /** 'none' for bytes stored as received. */
  compression: string;
  byte_count: number;
  /** '' unless the bytes are stored (a digest of a short text would reveal it). */
  blake3_hash: string;
  payload_state: PayloadState;
  /** JSON: which attribute the payload came from and, when not stored, why. Never the value. */
  redaction_metadata_json: string;
}

export type TraceRecord = TraceSpanRecord | TraceEventRecord | TraceArtifactRecord;

/** Bytes to store before the records that name them are published (full capture only). */
export interface ArtifactPayload {
  orgId: string;
  objectKey: string;
  bytes: Uint8Array;
}
