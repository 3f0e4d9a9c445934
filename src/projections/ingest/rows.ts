import type { AnalyticsRow } from '../../analytics/port.js';
import type { RequestCompleted } from '../../events/envelopes/request-completed.js';
import type { BodySide } from '../../events/subjects.js';

/**
 * Rows of migrations/clickhouse/0001_requests.sql for one envelope. Column names follow the
 * envelope's snake_case; money stays a decimal string (the engine parses it into Decimal(38, 18)
 * exactly) and instants stay the envelope's ISO-8601 text.
 */

/** Where one body is stored: `length` bytes at `offset` of `pack` under the request's org. */
export interface StoredBody {
  pack: string;
  offset: number;
  length: number;
  byteCount: number;
  blake3: string;
}

export type StoredBodies = Partial<Record<BodySide, StoredBody>>;

export interface WriteStamp {
  batchId: string;
  ingestedAt: Date;
}

export const requestRow = (e: RequestCompleted, bodies: StoredBodies, stamp: WriteStamp): AnalyticsRow => {
  const u = e.usage;
  const billing = e.billing;
  return {
    request_id: e.request_id,
    org_id: e.org_id,
    project_id: e.project_id,
    workspace_id: e.workspace_id,
    api_key_id: e.api_key_id,
    route: e.route,
    model_requested: e.model_requested,
    model_served: e.model_served,
    provider: e.provider,
    endpoint_id: e.endpoint_id,
    provider_model_id: e.provider_model_id,
    stream: e.stream,
    status: e.status,
    http_status: e.http_status,
    error_type: e.error?.type ?? null,
    error_code: e.error?.code ?? null,
    started_at: e.started_at,
    finished_at: e.finished_at,
    latency_ms: e.latency_ms,
    ttfb_ms: e.ttfb_ms,
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    cache_read_tokens: u.cache_read_tokens,
    cache_write_tokens: u.cache_write_tokens,
    reasoning_tokens: u.reasoning_tokens,
    audio_input_marker: u.audio_input_marker,
    audio_input_tokens: u.audio_input_tokens,
    audio_output_marker: u.audio_output_marker,
    audio_output_tokens: u.audio_output_tokens,
    has_audio: u.has_audio,
    input_image_tokens: u.input_image_tokens,
    output_image_tokens: u.output_image_tokens,
    total_cost_usd: e.total_cost_usd,
    billing_status: billing.status,
    billing_reason: billing.status === 'failed' ? billing.reason : null,
    billing_detail: billing.status === 'failed' ? billing.detail : null,
    rate_card_id: billing.rate_card_id,
    funding: e.funding,
    session_id: e.session_id,
    alt_beta: e.alt_beta ?? null,
    end_user_id: e.end_user_id,
    full_tracing: e.trace.full_tracing,
    trace_source: e.trace.source,
    tool_summary: JSON.stringify(e.tool_summary),
    tool_call_count: e.tool_summary.calls.reduce((n, c) => n + c.count, 0),
    attempts: JSON.stringify(e.attempts),
    attempt_count: e.attempts.length,
    usage_line_count: e.usage_lines.length,
    cost_line_count: e.cost_lines.length,
    req_body_pack: bodies.req?.pack ?? '',
    req_body_offset: bodies.req?.offset ?? 0,
    req_body_length: bodies.req?.length ?? 0,
    req_body_byte_count: bodies.req?.byteCount ?? 0,
    req_body_blake3: bodies.req?.blake3 ?? '',
    res_body_pack: bodies.res?.pack ?? '',
    res_body_offset: bodies.res?.offset ?? 0,
    res_body_length: bodies.res?.length ?? 0,
    res_body_byte_count: bodies.res?.byteCount ?? 0,
    res_body_blake3: bodies.res?.blake3 ?? '',
    schema_version: e.schema_version,
    batch_id: stamp.batchId,
    ingested_at: stamp.ingestedAt,
  };
};

// Line rows repeat the request's columns so line queries filter and group without a join. They
// are written out in each literal rather than spread from a shared object: a spread copies
// property by property into a dictionary-like object, and ingest builds one per line (profiled
// as the costliest part of a flush's row building).

export const usageLineRows = (e: RequestCompleted, stamp: WriteStamp): AnalyticsRow[] =>
  e.usage_lines.map((l, line_index) => ({
    request_id: e.request_id,
    org_id: e.org_id,
    project_id: e.project_id,
    workspace_id: e.workspace_id,
    api_key_id: e.api_key_id,
    started_at: e.started_at,
    model_served: e.model_served,
    provider: e.provider,
    endpoint_id: e.endpoint_id,
    batch_id: stamp.batchId,
    ingested_at: stamp.ingestedAt,
    line_index,
    meter: l.meter,
    modality: l.modality,
    tier: l.tier,
    cache_ttl: l.cache_ttl,
    tool_type: l.tool_type,
    quantity: l.quantity,
  }));

export const costLineRows = (e: RequestCompleted, stamp: WriteStamp): AnalyticsRow[] =>
  e.cost_lines.map((l, line_index) => {
    const p = l.provenance;
    const card = p.source === 'rate_card' ? p : null;
    return {
      request_id: e.request_id,
      org_id: e.org_id,
      project_id: e.project_id,
      workspace_id: e.workspace_id,
      api_key_id: e.api_key_id,
      started_at: e.started_at,
      model_served: e.model_served,
      provider: e.provider,
      endpoint_id: e.endpoint_id,
      batch_id: stamp.batchId,
      ingested_at: stamp.ingestedAt,
      funding: e.funding,
      line_index,
      meter: l.meter,
      modality: l.modality,
      tier: l.tier,
      cache_ttl: l.cache_ttl,
      tool_type: l.tool_type,
      quantity: l.quantity,
      unit_price: l.unit_price,
      amount: l.amount,
      estimated: l.estimated,
      provenance_source: p.source,
      rate_card_id: card?.rate_card_id ?? null,
      rate_row_id: card?.rate_row_id ?? null,
      rate_card_revision: card?.revision ?? null,
      effective_from: card?.effective_from ?? null,
      effective_to: card?.effective_to ?? null,
      zero_rated_rule: p.source === 'zero_rated' ? p.rule : null,
    };
  });
