/**
 * Shapes of the pricing domain (SPEC 2.5, 2.8, 3, 4.1 rules 9-10). Records that cross into the
 * request.completed envelope use the wire's snake_case and carry money only as decimal strings.
 */

/** CSV `meter` values. Token meters are priced per token; the others per request, image or call. */
export const METERS = [
  'input_token',
  'cache_read_token',
  'cache_write_token',
  'output_token',
  'request',
  'image',
  'tool_call',
] as const;
export type Meter = (typeof METERS)[number];

/** CSV `modality`: audio and image variants of a token meter are rows with that modality. */
export const MODALITIES = ['text', 'audio', 'image'] as const;
export type Modality = (typeof MODALITIES)[number];

export const STANDARD_TIER = 'standard';

export const OPERATIONS = [
  'chat',
  'responses',
  'messages',
  'count_tokens',
  'embeddings',
  'moderations',
  'image_generation',
  'image_edit',
  'image_variation',
] as const;
export type Operation = (typeof OPERATIONS)[number];

export const isImageOperation = (operation: Operation): boolean =>
  operation === 'image_generation' || operation === 'image_edit' || operation === 'image_variation';

/** Operations that never cost anything, whatever the card says. */
export type ZeroRatedOperation = 'moderations' | 'count_tokens';
export const isZeroRated = (operation: Operation): operation is ZeroRatedOperation =>
  operation === 'moderations' || operation === 'count_tokens';

/** One rate-card row as the registry read model holds it: the price is per unit, exact. */
export interface RateRowInput {
  row_id: string;
  tier: string;
  meter: Meter;
  modality: Modality;
  min_context: number;
  /** Inclusive upper edge; null or not, the highest band of a meter is treated as unbounded. */
  max_context: number | null;
  /** Only on cache_write_token; null there means "any TTL without a row of its own". */
  cache_ttl: string | null;
  /** Only (and always) on tool_call. */
  tool_type: string | null;
  /** USD per token, per request, per image or per call, as an exact decimal string. */
  unit_price: string;
}

export interface RateCardInput {
  card_id: string;
  model: string;
  /** Corrected prices are a new card on the same interval: the higher revision wins. */
  revision: number;
  /** ISO-8601 instant, inclusive. */
  effective_from: string;
  /** ISO-8601 instant, exclusive; null is open-ended. */
  effective_to: string | null;
  rows: readonly RateRowInput[];
}

/**
 * Normalized usage of one served request. Token counts are the provider's: prompt_tokens includes
 * cache-read and cache-write tokens, completion_tokens includes reasoning tokens. The counters
 * SPEC 4.1 rule 10 judges (audio, reasoning) arrive raw, exactly as the provider sent them.
 */
export interface PricingUsage {
  operation: Operation;
  /** Service tier the request was billed under; absent is standard. */
  tier?: string;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens?: number;
  /** Cache-write tokens by TTL label, e.g. `{ '5m': 1200, '1h': 300 }`. */
  cache_write_tokens?: Readonly<Record<string, number>>;
  reasoning_tokens?: unknown;
  audio_input_tokens?: unknown;
  audio_output_tokens?: unknown;
  /** Whether the request asked for audio: an input_audio part (input); audio output (output). */
  audio_requested?: { readonly input: boolean; readonly output: boolean };
  /** Image-route input_tokens_details.image_tokens; chat counts image input as text (rule 9). */
  input_image_tokens?: number;
  /** Image-route output image tokens. */
  output_image_tokens?: number;
  /** Upstream requests the operation made; absent is 1. */
  request_count?: number;
  /** Images returned (or, when unknown, requested): the per-image estimate multiplies this. */
  image_count?: number;
  /** Server-side tool calls by tool_type. */
  tool_calls?: Readonly<Record<string, number>>;
}

export type AudioMarker = 'reported' | 'not_reported' | 'unreadable';

export type AudioCounter =
  | { marker: 'reported'; tokens: number }
  | { marker: 'not_reported'; tokens: null }
  /** `raw` is a bounded rendering of what the provider sent, kept for the failure report. */
  | { marker: 'unreadable'; tokens: null; raw: string };

export type RateProvenance =
  | {
      source: 'rate_card';
      rate_card_id: string;
      rate_row_id: string;
      revision: number;
      effective_from: string;
      effective_to: string | null;
    }
  | { source: 'zero_rated'; rule: ZeroRatedOperation };

export interface CostLine {
  meter: Meter;
  modality: Modality;
  tier: string;
  cache_ttl: string | null;
  tool_type: string | null;
  quantity: number;
  unit_price: string;
  amount: string;
  /** True for per-image costs of request-priced image models (SPEC 4.1 rule 9). */
  estimated: boolean;
  provenance: RateProvenance;
}

export const BILLING_REASONS = [
  'no_rate_card',
  'missing_price',
  'invalid_usage',
  'cached_tokens_exceed_prompt_tokens',
  'audio_input_exceeds_prompt_tokens',
  'audio_output_exceeds_completion_tokens',
  'audio_input_breakdown_missing',
  'audio_output_breakdown_missing',
  // The gateway process stopped after the upstream call began and before the upstream reported
  // usage: the request is recorded as interrupted, served-and-not-charged (SPEC 7.6 rule 2).
  'interrupted',
  /** The served request's own body could not be read for pricing (SPEC 4.1 rule 10: served, not charged). */
  'unreadable_request',
] as const;
export type BillingReason = (typeof BILLING_REASONS)[number];

export interface BillingFailure {
  reason: BillingReason;
  detail: string;
}

/** Per-request counters stored whatever the billing outcome (SPEC 2.5). */
export interface UsageAttribution {
  reasoning_tokens: number | null;
  audio_input: AudioCounter;
  audio_output: AudioCounter;
  carried_audio: boolean;
}

interface PricingOutcomeBase {
  rate_card_id: string | null;
  attribution: UsageAttribution;
}

export type PricingResult =
  | (PricingOutcomeBase & {
      billing_status: 'priced';
      billing_reason: null;
      billing_detail: null;
      lines: CostLine[];
      total: string;
    })
  | (PricingOutcomeBase & {
      billing_status: 'failed';
      billing_reason: BillingReason;
      billing_detail: string;
      /** A failed request is served and not charged: no lines, total 0 (SPEC 7.6 rule 2). */
      lines: [];
      total: '0';
    });

export type BillingStatus = PricingResult['billing_status'];
