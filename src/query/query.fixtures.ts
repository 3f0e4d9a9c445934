import type { AnalyticsRow } from '../analytics/port.js';
import { addUsd, formatUsd, parseUsd, type Usd, usdFromAtto, ZERO_USD } from '../lib/money.js';

/**
 * Rows shaped as src/ingest/rows.ts writes them, for query tests and the bench: a request row plus
 * its cost and usage lines, generated from a seeded PRNG so a failing run reproduces.
 */

export const prng = (seed: number) => {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

export interface Tenant {
  org_id: string;
  project_id: string;
  workspace_id: string;
  api_key_id: string;
}

export interface GeneratedRequest {
  request: AnalyticsRow;
  costLines: AnalyticsRow[];
  usageLines: AnalyticsRow[];
  total: Usd;
}

const BODY_NONE = {
  req_body_pack: '',
  req_body_offset: 0,
  req_body_length: 0,
  req_body_byte_count: 0,
  req_body_blake3: '',
  res_body_pack: '',
  res_body_offset: 0,
  res_body_length: 0,
  res_body_byte_count: 0,
  res_body_blake3: '',
};

const MODELS: [string, string][] = [
  ['openai', 'gpt-4o-mini'],
  ['anthropic', 'claude-sonnet-4'],
  ['bedrock', 'nova-pro'],
  ['azure', 'gpt-4.1'],
];

/** A random amount with all 18 decimals in use, so any lossy step would show in the total. */
const randomUsd = (rand: () => number): Usd =>
  usdFromAtto(BigInt(Math.floor(rand() * 1e9)) * 1_000_000_000n + BigInt(Math.floor(rand() * 1e9)));

export interface RequestSpec {
  tenant: Tenant;
  requestId: string;
  startedAt: Date;
  rand: () => number;
  sessionId?: string | null;
  /** complete: lines add up; gap: lines miss part of the total; none: no lines; failed: unpriced 0. */
  itemization?: 'complete' | 'gap' | 'none' | 'failed';
  ingestedAt?: Date;
  body?: Partial<typeof BODY_NONE>;
}

export const generateRequest = (spec: RequestSpec): GeneratedRequest => {
  const { rand, tenant } = spec;
  const [provider, model] = MODELS[Math.floor(rand() * MODELS.length)]!;
  const kind = spec.itemization ?? 'complete';
  const meters = ['input_token', 'output_token', 'cache_read_token'].slice(0, 1 + Math.floor(rand() * 3));
  const amounts = kind === 'failed' || kind === 'none' ? [] : meters.map(() => randomUsd(rand));
  let total = amounts.reduce((s, x) => addUsd(s, x), ZERO_USD);
  if (kind === 'gap' || kind === 'none') total = addUsd(total, randomUsd(rand));
  const started = spec.startedAt.toISOString();
  const ingested = spec.ingestedAt ?? new Date(spec.startedAt.getTime() + 5_000);
  const prompt = Math.floor(rand() * 5000);
  const completion = Math.floor(rand() * 2000);
  const status = kind === 'failed' ? (rand() < 0.5 ? 429 : 502) : 200;
  const ctx = {
    request_id: spec.requestId,
    org_id: tenant.org_id,
    project_id: tenant.project_id,
    workspace_id: tenant.workspace_id,
    api_key_id: tenant.api_key_id,
    started_at: started,
    model_served: model,
    provider,
    endpoint_id: `ep_${provider}`,
    batch_id: 'batch_test',
    ingested_at: ingested,
  };
  const request: AnalyticsRow = {
    ...ctx,
    route: 'chat.completions',
    model_requested: model,
    provider_model_id: model,
    stream: rand() < 0.3,
    status: status === 200 ? 'success' : 'error',
    http_status: status,
    error_type: status === 200 ? null : 'upstream_error',
    error_code: status === 200 ? null : `http_${status}`,
    finished_at: new Date(spec.startedAt.getTime() + 900).toISOString(),
    latency_ms: 100 + Math.floor(rand() * 2000),
    ttfb_ms: 50,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
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
    total_cost_usd: formatUsd(total),
    billing_status: kind === 'failed' ? 'failed' : 'priced',
    billing_reason: kind === 'failed' ? 'upstream_error' : null,
    billing_detail: null,
    rate_card_id: 'rc_1',
    funding: 'wallet',
    session_id: spec.sessionId ?? null,
    end_user_id: null,
    full_tracing: false,
    trace_source: 'none',
    tool_summary: JSON.stringify({ calls: [] }),
    tool_call_count: 0,
    attempts: JSON.stringify([]),
    attempt_count: 1,
    usage_line_count: meters.length,
    cost_line_count: amounts.length,
    ...BODY_NONE,
    ...spec.body,
    schema_version: 1,
  };
  const costLines = amounts.map((amount, line_index) => ({
    ...ctx,
    funding: 'wallet',
    line_index,
    meter: meters[line_index],
    modality: line_index === 2 ? 'image' : 'text',
    tier: 'standard',
    cache_ttl: null,
    tool_type: null,
    quantity: 1000,
    unit_price: formatUsd(usdFromAtto(parseUsd(formatUsd(amount)) / 1000n)),
    amount: formatUsd(amount),
    estimated: false,
    provenance_source: 'rate_card',
    rate_card_id: 'rc_1',
    rate_row_id: 'row_1',
    rate_card_revision: 1,
    effective_from: '2020-01-01T00:00:00Z',
    effective_to: null,
    zero_rated_rule: null,
  }));
  const usageLines = meters.map((meter, line_index) => ({
    ...ctx,
    line_index,
    meter,
    modality: 'text',
    tier: 'standard',
    cache_ttl: null,
    tool_type: null,
    quantity: line_index === 0 ? prompt : completion,
  }));
  return { request, costLines, usageLines, total };
};

export const insertGenerated = async (
  insert: (table: string, rows: AnalyticsRow[]) => Promise<void>,
  generated: readonly GeneratedRequest[],
): Promise<void> => {
  await insert(
    'requests',
    generated.map((g) => g.request),
  );
  await insert(
    'request_cost_lines',
    generated.flatMap((g) => g.costLines),
  );
  await insert(
    'request_usage_lines',
    generated.flatMap((g) => g.usageLines),
  );
};
