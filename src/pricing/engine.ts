import { formatUsd, type Usd } from '../lib/money.js';
import { audioShare, readCounter, readOptionalCount } from './audio.js';
import { type CompiledRate, type CompiledRateCard, findRate } from './rate-card.js';
import {
  type AudioCounter,
  type BillingFailure,
  type CostLine,
  isImageOperation,
  isZeroRated,
  type Meter,
  type Modality,
  type PricingResult,
  type PricingUsage,
  type RateProvenance,
  STANDARD_TIER,
  type UsageAttribution,
  type ZeroRatedOperation,
} from './types.js';

/**
 * The pricing engine: usage of one served request plus the card in force -> cost lines. Pure: the
 * caller selects the card (`selectRateCard`) and supplies everything; nothing here reads a clock.
 */

interface Pricing {
  readonly card: CompiledRateCard;
  readonly tier: string;
  readonly promptSize: number;
  /** Request-priced image models may report tokens that no row prices; those are not failures. */
  readonly tokensOptional: boolean;
  readonly lines: CostLine[];
  total: bigint;
}

const ZERO_RATED: Readonly<Record<ZeroRatedOperation, RateProvenance>> = {
  moderations: Object.freeze({ source: 'zero_rated', rule: 'moderations' }),
  count_tokens: Object.freeze({ source: 'zero_rated', rule: 'count_tokens' }),
};

const push = (
  p: Pricing,
  rate: CompiledRate,
  quantity: number,
  qualifiers: { cacheTtl?: string; toolType?: string; estimated?: boolean } = {},
): void => {
  const amount = rate.price * BigInt(quantity);
  p.total += amount;
  p.lines.push({
    meter: rate.row.meter,
    modality: rate.row.modality,
    tier: p.tier,
    cache_ttl: qualifiers.cacheTtl ?? null,
    tool_type: qualifiers.toolType ?? null,
    quantity,
    unit_price: rate.priceText,
    amount: formatUsd(amount as Usd),
    estimated: qualifiers.estimated ?? false,
    provenance: rate.provenance,
  });
};

const missingPrice = (p: Pricing, meter: Meter, modality: Modality, qualifier: string): BillingFailure => ({
  reason: 'missing_price',
  detail:
    `card ${p.card.card_id} has no ${p.tier} price for ${meter}/${modality}` +
    `${qualifier === '' ? '' : ` (${qualifier})`} at prompt size ${p.promptSize}`,
});

/** Prices `quantity` on a token meter; zero quantities need no price and add no line. */
const priceTokens = (
  p: Pricing,
  meter: Meter,
  modality: Modality,
  quantity: number,
  rate: CompiledRate | undefined,
  cacheTtl?: string,
): BillingFailure | undefined => {
  if (quantity === 0) return undefined;
  if (rate === undefined) {
    return p.tokensOptional ? undefined : missingPrice(p, meter, modality, cacheTtl ?? '');
  }
  push(p, rate, quantity, cacheTtl === undefined ? {} : { cacheTtl });
  return undefined;
};

/** One token half (input after cache classes, or output): text, audio and image lines. */
const priceHalf = (
  p: Pricing,
  side: 'input' | 'output',
  sideTotal: number,
  cached: number,
  counter: AudioCounter,
  requested: boolean,
  imageTokens: number,
): BillingFailure | undefined => {
  const meter: Meter = side === 'input' ? 'input_token' : 'output_token';
  let text = sideTotal - cached;
  let audio = 0;
  const audioRate = findRate(p.card, p.tier, meter, 'audio', p.promptSize);
  if (audioRate !== undefined) {
    const share = audioShare(side, counter, requested, sideTotal, cached, text);
    if (typeof share !== 'number') return share;
    audio = share;
    text -= audio;
  }
  let image = 0;
  const imageRate = imageTokens > 0 ? findRate(p.card, p.tier, meter, 'image', p.promptSize) : undefined;
  if (imageRate !== undefined) {
    image = Math.min(imageTokens, text);
    text -= image;
  }
  const textRate = text > 0 ? findRate(p.card, p.tier, meter, 'text', p.promptSize) : undefined;
  return (
    priceTokens(p, meter, 'text', text, textRate) ??
    priceTokens(p, meter, 'audio', audio, audioRate) ??
    priceTokens(p, meter, 'image', image, imageRate)
  );
};

const priceCaches = (p: Pricing, cacheRead: number, writes: Readonly<Record<string, number>>) => {
  const readRate =
    cacheRead > 0 ? findRate(p.card, p.tier, 'cache_read_token', 'text', p.promptSize) : undefined;
  const failure = priceTokens(p, 'cache_read_token', 'text', cacheRead, readRate);
  if (failure !== undefined) return failure;
  for (const ttl in writes) {
    const tokens = writes[ttl] as number;
    if (tokens === 0) continue;
    const rate =
      findRate(p.card, p.tier, 'cache_write_token', 'text', p.promptSize, ttl) ??
      findRate(p.card, p.tier, 'cache_write_token', 'text', p.promptSize);
    const written = priceTokens(p, 'cache_write_token', 'text', tokens, rate, ttl);
    if (written !== undefined) return written;
  }
  return undefined;
};

/** Per-request, per-image and per-call meters. */
const priceUnits = (p: Pricing, usage: PricingUsage): BillingFailure | undefined => {
  const requestRate = findRate(p.card, p.tier, 'request', 'text', p.promptSize);
  const imageRate = findRate(p.card, p.tier, 'image', 'text', p.promptSize);
  const images = usage.image_count ?? 0;
  if (imageRate !== undefined && images > 0) push(p, imageRate, images, { estimated: true });
  if (requestRate !== undefined) {
    // A request-priced image model: its request rate is the price of one image (SPEC 4.1 rule 9).
    if (isImageOperation(usage.operation) && imageRate === undefined) {
      if (images > 0) push(p, requestRate, images, { estimated: true });
    } else {
      const requests = usage.request_count ?? 1;
      if (requests > 0) push(p, requestRate, requests);
    }
  }
  const tools = usage.tool_calls ?? {};
  for (const toolType in tools) {
    const calls = tools[toolType] as number;
    if (calls === 0) continue;
    const rate = findRate(p.card, p.tier, 'tool_call', 'text', p.promptSize, toolType);
    if (rate === undefined) return missingPrice(p, 'tool_call', 'text', toolType);
    push(p, rate, calls, { toolType });
  }
  return undefined;
};

const isCount = (value: unknown): boolean =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The first token or unit count that is not a non-negative safe integer, by field name. */
const invalidCount = (usage: PricingUsage): string | undefined => {
  if (!isCount(usage.prompt_tokens)) return 'prompt_tokens';
  if (!isCount(usage.completion_tokens)) return 'completion_tokens';
  const optional = [
    'cache_read_tokens',
    'input_image_tokens',
    'output_image_tokens',
    'request_count',
    'image_count',
  ] as const;
  for (const field of optional) {
    if (usage[field] !== undefined && !isCount(usage[field])) return field;
  }
  for (const [field, map] of [
    ['cache_write_tokens', usage.cache_write_tokens],
    ['tool_calls', usage.tool_calls],
  ] as const) {
    if (map === undefined) continue;
    for (const key in map) if (!isCount(map[key])) return `${field}.${key}`;
  }
  return undefined;
};

const attributionOf = (usage: PricingUsage): UsageAttribution => ({
  reasoning_tokens: readOptionalCount(usage.reasoning_tokens),
  audio_input: readCounter(usage.audio_input_tokens),
  audio_output: readCounter(usage.audio_output_tokens),
  carried_audio: usage.audio_requested?.input === true || usage.audio_requested?.output === true,
});

const failed = (
  failure: BillingFailure,
  card: CompiledRateCard | undefined,
  attribution: UsageAttribution,
): PricingResult => ({
  billing_status: 'failed',
  billing_reason: failure.reason,
  billing_detail: failure.detail,
  lines: [],
  total: '0',
  rate_card_id: card?.card_id ?? null,
  attribution,
});

/** A served request that could not be priced at all: failed, with nothing known of its counters. */
export const billingFailed = (failure: BillingFailure, card: CompiledRateCard | undefined): PricingResult =>
  failed(failure, card, {
    reasoning_tokens: null,
    audio_input: { marker: 'not_reported', tokens: null },
    audio_output: { marker: 'not_reported', tokens: null },
    carried_audio: false,
  });

/**
 * Prices one served request. Input tokens split into text, audio (SPEC 4.1 rule 10) and image
 * lines, minus the cache classes, which go on their own meters; output tokens split the same way
 * without a cache meter; reasoning tokens stay inside completion_tokens and are attribution only.
 * Any failure prices the whole request at 0 with the reason (served, not charged).
 */
export const priceUsage = (card: CompiledRateCard | undefined, usage: PricingUsage): PricingResult => {
  const attribution = attributionOf(usage);
  const tier = usage.tier ?? STANDARD_TIER;
  const operation = usage.operation;
  if (isZeroRated(operation)) {
    const line: CostLine = {
      meter: 'request',
      modality: 'text',
      tier,
      cache_ttl: null,
      tool_type: null,
      quantity: usage.request_count ?? 1,
      unit_price: '0',
      amount: '0',
      estimated: false,
      provenance: ZERO_RATED[operation],
    };
    return {
      billing_status: 'priced',
      billing_reason: null,
      billing_detail: null,
      lines: [line],
      total: '0',
      rate_card_id: card?.card_id ?? null,
      attribution,
    };
  }
  if (card === undefined) {
    return failed(
      { reason: 'no_rate_card', detail: 'no rate card is in force at the request time' },
      card,
      attribution,
    );
  }
  const invalid = invalidCount(usage);
  if (invalid !== undefined) {
    return failed(
      { reason: 'invalid_usage', detail: `${invalid} is not a non-negative integer` },
      card,
      attribution,
    );
  }
  const prompt = usage.prompt_tokens;
  const cacheRead = usage.cache_read_tokens ?? 0;
  const writes = usage.cache_write_tokens ?? {};
  let cached = cacheRead;
  for (const ttl in writes) cached += writes[ttl] as number;
  if (cached > prompt) {
    const detail = `cache-read plus cache-write tokens ${cached} exceed prompt_tokens ${prompt}`;
    return failed({ reason: 'cached_tokens_exceed_prompt_tokens', detail }, card, attribution);
  }
  const p: Pricing = {
    card,
    tier,
    promptSize: prompt,
    tokensOptional:
      isImageOperation(operation) &&
      (findRate(card, tier, 'image', 'text', prompt) !== undefined ||
        findRate(card, tier, 'request', 'text', prompt) !== undefined),
    lines: [],
    total: 0n,
  };
  const requested = usage.audio_requested;
  const failure =
    priceHalf(
      p,
      'input',
      prompt,
      cached,
      attribution.audio_input,
      requested?.input === true,
      usage.input_image_tokens ?? 0,
    ) ??
    priceCaches(p, cacheRead, writes) ??
    priceHalf(
      p,
      'output',
      usage.completion_tokens,
      0,
      attribution.audio_output,
      requested?.output === true,
      usage.output_image_tokens ?? 0,
    ) ??
    priceUnits(p, usage);
  if (failure !== undefined) return failed(failure, card, attribution);
  return {
    billing_status: 'priced',
    billing_reason: null,
    billing_detail: null,
    lines: p.lines,
    total: formatUsd(p.total as Usd),
    rate_card_id: card.card_id,
    attribution,
  };
};
