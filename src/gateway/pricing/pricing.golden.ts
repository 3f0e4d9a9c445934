import {
  ANY_TTL_CARD,
  AUDIO_CARD,
  IMAGE_METER_CARD,
  IMAGE_TOKEN_CARD,
  INPUT_ONLY_CARD,
  REQUEST_CARD,
  REQUEST_PRICED_IMAGE_CARD,
} from './pricing.fixtures.js';
import type { CompiledRateCard } from './rate-card.js';
import type { AudioMarker, BillingReason, PricingUsage } from './types.js';

/**
 * The golden table: every amount below was multiplied out by hand from the fixture prices
 * (pricing.fixtures.ts), never computed by the engine. A line is
 * [meter/modality(@ttl)(#tool)( est), quantity, unit_price, amount].
 */

export type GoldenLine = readonly [key: string, quantity: number, unitPrice: string, amount: string];

export interface GoldenCase {
  name: string;
  /** A card, or an instant at which the card is selected from VERSIONED_CARDS. */
  card: CompiledRateCard | undefined | { at: string };
  usage: PricingUsage;
  expected: { total: string; lines: readonly GoldenLine[] } | { failed: BillingReason };
  markers?: readonly [input: AudioMarker, output: AudioMarker];
}

export const chat = (
  prompt: number,
  completion: number,
  extra: Partial<PricingUsage> = {},
): PricingUsage => ({
  operation: 'chat',
  prompt_tokens: prompt,
  completion_tokens: completion,
  ...extra,
});
export const audioIn = (tokens: unknown, requested = true) => ({
  audio_input_tokens: tokens,
  audio_requested: { input: requested, output: false },
});
export const audioOut = (tokens: unknown, requested = true) => ({
  audio_output_tokens: tokens,
  audio_requested: { input: false, output: requested },
});
export const fails = (reason: BillingReason) => ({ failed: reason });

/** Cases other than the audio split; those are in pricing.golden.audio.ts. */
export const GOLDEN_CASES: readonly GoldenCase[] = [
  // Context bands: max_context is inclusive; the last band is unbounded whatever it says.
  {
    name: 'plain chat in the first band',
    card: AUDIO_CARD,
    usage: chat(1000, 500),
    expected: {
      total: '0.0105',
      lines: [
        ['input_token/text', 1000, '0.000003', '0.003'],
        ['output_token/text', 500, '0.000015', '0.0075'],
      ],
    },
  },
  {
    name: 'prompt exactly at max_context stays in the lower band',
    card: AUDIO_CARD,
    usage: chat(200_000, 0),
    expected: { total: '0.6', lines: [['input_token/text', 200_000, '0.000003', '0.6']] },
  },
  {
    name: 'one token past the edge moves every meter to the upper band',
    card: AUDIO_CARD,
    usage: chat(200_001, 10),
    expected: {
      total: '1.200231',
      lines: [
        ['input_token/text', 200_001, '0.000006', '1.200006'],
        ['output_token/text', 10, '0.0000225', '0.000225'],
      ],
    },
  },
  {
    name: 'empty prompt at min_context 0 adds no input line',
    card: AUDIO_CARD,
    usage: chat(0, 100),
    expected: { total: '0.0015', lines: [['output_token/text', 100, '0.000015', '0.0015']] },
  },
  {
    name: "prompt exactly at the last band's max_context",
    card: AUDIO_CARD,
    usage: chat(1_000_000, 0),
    expected: { total: '6', lines: [['input_token/text', 1_000_000, '0.000006', '6']] },
  },
  {
    name: "prompt beyond the last band's max_context is priced by it (unbounded)",
    card: AUDIO_CARD,
    usage: chat(1_500_000, 0),
    expected: { total: '9', lines: [['input_token/text', 1_500_000, '0.000006', '9']] },
  },
  {
    name: 'UInt32-max prompt stays exact',
    card: AUDIO_CARD,
    usage: chat(4_294_967_295, 0),
    expected: {
      total: '25769.80377',
      lines: [['input_token/text', 4_294_967_295, '0.000006', '25769.80377']],
    },
  },
  // Cache classes: removed from the input line, billed on their own meters.
  {
    name: 'cache read billed on cache_read_token and removed from input',
    card: AUDIO_CARD,
    usage: chat(10_000, 200, { cache_read_tokens: 8000 }),
    expected: {
      total: '0.0114',
      lines: [
        ['input_token/text', 2000, '0.000003', '0.006'],
        ['cache_read_token/text', 8000, '0.0000003', '0.0024'],
        ['output_token/text', 200, '0.000015', '0.003'],
      ],
    },
  },
  {
    name: 'cache read in the upper band',
    card: AUDIO_CARD,
    usage: chat(250_000, 0, { cache_read_tokens: 200_000 }),
    expected: {
      total: '0.42',
      lines: [
        ['input_token/text', 50_000, '0.000006', '0.3'],
        ['cache_read_token/text', 200_000, '0.0000006', '0.12'],
      ],
    },
  },
  {
    name: 'cache write with ttl 5m',
    card: AUDIO_CARD,
    usage: chat(5000, 100, { cache_write_tokens: { '5m': 4000 } }),
    expected: {
      total: '0.0195',
      lines: [
        ['input_token/text', 1000, '0.000003', '0.003'],
        ['cache_write_token/text@5m', 4000, '0.00000375', '0.015'],
        ['output_token/text', 100, '0.000015', '0.0015'],
      ],
    },
  },
  {
    name: 'cache read plus writes at two TTLs',
    card: AUDIO_CARD,
    usage: chat(10_000, 0, { cache_read_tokens: 3000, cache_write_tokens: { '5m': 2000, '1h': 1000 } }),
    expected: {
      total: '0.0264',
      lines: [
        ['input_token/text', 4000, '0.000003', '0.012'],
        ['cache_read_token/text', 3000, '0.0000003', '0.0009'],
        ['cache_write_token/text@5m', 2000, '0.00000375', '0.0075'],
        ['cache_write_token/text@1h', 1000, '0.000006', '0.006'],
      ],
    },
  },
  {
    name: 'a cache-write row without TTL prices an unlisted TTL',
    card: ANY_TTL_CARD,
    usage: chat(100, 0, { cache_write_tokens: { '1h': 100 } }),
    expected: { total: '0.0002', lines: [['cache_write_token/text@1h', 100, '0.000002', '0.0002']] },
  },
  {
    name: 'cache write at a TTL the card does not price fails',
    card: AUDIO_CARD,
    usage: chat(1000, 0, { cache_write_tokens: { '24h': 10 } }),
    expected: fails('missing_price'),
  },
  {
    name: 'cached tokens beyond prompt_tokens fail',
    card: AUDIO_CARD,
    usage: chat(100, 0, { cache_read_tokens: 80, cache_write_tokens: { '5m': 30 } }),
    expected: fails('cached_tokens_exceed_prompt_tokens'),
  },
  // Reasoning tokens are attribution only: they stay inside completion_tokens, no line of their own.
  {
    name: 'reasoning tokens produce no cost line',
    card: AUDIO_CARD,
    usage: chat(100, 1000, { reasoning_tokens: 800 }),
    expected: {
      total: '0.0153',
      lines: [
        ['input_token/text', 100, '0.000003', '0.0003'],
        ['output_token/text', 1000, '0.000015', '0.015'],
      ],
    },
  },
  {
    name: 'an unreadable reasoning counter changes nothing',
    card: AUDIO_CARD,
    usage: chat(100, 1000, { reasoning_tokens: 'eight hundred' }),
    expected: {
      total: '0.0153',
      lines: [
        ['input_token/text', 100, '0.000003', '0.0003'],
        ['output_token/text', 1000, '0.000015', '0.015'],
      ],
    },
  },
  // Images.
  {
    name: 'image tokens split from text tokens on an image route',
    card: IMAGE_TOKEN_CARD,
    usage: {
      operation: 'image_edit',
      prompt_tokens: 1200,
      completion_tokens: 4160,
      input_image_tokens: 1000,
      output_image_tokens: 4160,
      image_count: 1,
    },
    expected: {
      total: '0.1774',
      lines: [
        ['input_token/text', 200, '0.000005', '0.001'],
        ['input_token/image', 1000, '0.00001', '0.01'],
        ['output_token/image', 4160, '0.00004', '0.1664'],
      ],
    },
  },
  {
    name: 'image input on chat is text input when the card has no image rate',
    card: AUDIO_CARD,
    usage: chat(1000, 0, { input_image_tokens: 500 }),
    expected: { total: '0.003', lines: [['input_token/text', 1000, '0.000003', '0.003']] },
  },
  {
    name: 'request-priced image model: estimated cost per image',
    card: REQUEST_PRICED_IMAGE_CARD,
    usage: { operation: 'image_generation', prompt_tokens: 0, completion_tokens: 0, image_count: 3 },
    expected: { total: '0.12', lines: [['request/text est', 3, '0.04', '0.12']] },
  },
  {
    name: 'request-priced image model reporting tokens it has no price for',
    card: REQUEST_PRICED_IMAGE_CARD,
    usage: { operation: 'image_generation', prompt_tokens: 50, completion_tokens: 0, image_count: 1 },
    expected: { total: '0.04', lines: [['request/text est', 1, '0.04', '0.04']] },
  },
  {
    name: 'per-image meter, per-request fee and input tokens together',
    card: IMAGE_METER_CARD,
    usage: { operation: 'image_generation', prompt_tokens: 100, completion_tokens: 0, image_count: 2 },
    expected: {
      total: '0.0411',
      lines: [
        ['input_token/text', 100, '0.000001', '0.0001'],
        ['image/image est', 2, '0.02', '0.04'],
        ['request/text', 1, '0.001', '0.001'],
      ],
    },
  },
  // Per-request meter.
  {
    name: 'per-request meter on chat',
    card: REQUEST_CARD,
    usage: chat(1000, 1000),
    expected: {
      total: '0.0035',
      lines: [
        ['input_token/text', 1000, '0.000001', '0.001'],
        ['output_token/text', 1000, '0.000002', '0.002'],
        ['request/text', 1, '0.0005', '0.0005'],
      ],
    },
  },
  {
    name: 'per-request meter counts every upstream call of a fanned-out embedding',
    card: REQUEST_CARD,
    usage: { operation: 'embeddings', prompt_tokens: 300, completion_tokens: 0, request_count: 3 },
    expected: {
      total: '0.0018',
      lines: [
        ['input_token/text', 300, '0.000001', '0.0003'],
        ['request/text', 3, '0.0005', '0.0015'],
      ],
    },
  },
  // Moderations and count_tokens cost zero, card or no card.
  {
    name: 'moderations cost zero without a card',
    card: undefined,
    usage: { operation: 'moderations', prompt_tokens: 100, completion_tokens: 0 },
    expected: { total: '0', lines: [['request/text', 1, '0', '0']] },
  },
  {
    name: 'moderations cost zero even on a priced card',
    card: AUDIO_CARD,
    usage: { operation: 'moderations', prompt_tokens: 5000, completion_tokens: 0 },
    expected: { total: '0', lines: [['request/text', 1, '0', '0']] },
  },
  // Effective dates: from inclusive, to exclusive, higher revision wins on the same interval.
  {
    name: 'before the first card: no rate card',
    card: { at: '2024-12-31T23:59:59.999Z' },
    usage: chat(1000, 0),
    expected: fails('no_rate_card'),
  },
  {
    name: 'at effective_from the corrected revision applies',
    card: { at: '2025-01-01T00:00:00.000Z' },
    usage: chat(1000, 0),
    expected: { total: '0.0011', lines: [['input_token/text', 1000, '0.0000011', '0.0011']] },
  },
  {
    name: 'the last millisecond before effective_to',
    card: { at: '2025-06-30T23:59:59.999Z' },
    usage: chat(1000, 0),
    expected: { total: '0.0011', lines: [['input_token/text', 1000, '0.0000011', '0.0011']] },
  },
  {
    name: 'at effective_to the next card applies',
    card: { at: '2025-07-01T00:00:00.000Z' },
    usage: chat(1000, 0),
    expected: { total: '0.002', lines: [['input_token/text', 1000, '0.000002', '0.002']] },
  },
  // Tiers.
  {
    name: 'flex tier prices from its own rows',
    card: AUDIO_CARD,
    usage: chat(1000, 1000, { tier: 'flex' }),
    expected: {
      total: '0.009',
      lines: [
        ['input_token/text', 1000, '0.0000015', '0.0015'],
        ['output_token/text', 1000, '0.0000075', '0.0075'],
      ],
    },
  },
  {
    name: 'a tier the card does not price fails (no fallback to standard)',
    card: AUDIO_CARD,
    usage: chat(1000, 1000, { tier: 'priority' }),
    expected: fails('missing_price'),
  },
  // Missing prices and invalid usage.
  {
    name: 'missing output price fails',
    card: INPUT_ONLY_CARD,
    usage: chat(10, 10),
    expected: fails('missing_price'),
  },
  {
    name: 'a missing price for a zero quantity is not needed',
    card: INPUT_ONLY_CARD,
    usage: chat(10, 0),
    expected: { total: '0.00001', lines: [['input_token/text', 10, '0.000001', '0.00001']] },
  },
  {
    name: 'missing cache_read price fails',
    card: REQUEST_CARD,
    usage: chat(100, 0, { cache_read_tokens: 10 }),
    expected: fails('missing_price'),
  },
  {
    name: 'no card in force fails',
    card: undefined,
    usage: chat(1, 1),
    expected: fails('no_rate_card'),
  },
  {
    name: 'server tool calls on their own meter',
    card: AUDIO_CARD,
    usage: chat(100, 0, { tool_calls: { web_search: 2 } }),
    expected: {
      total: '0.0203',
      lines: [
        ['input_token/text', 100, '0.000003', '0.0003'],
        ['tool_call/text#web_search', 2, '0.01', '0.02'],
      ],
    },
  },
  {
    name: 'a tool call with no price fails',
    card: AUDIO_CARD,
    usage: chat(100, 0, { tool_calls: { code_interpreter: 1 } }),
    expected: fails('missing_price'),
  },
  {
    name: 'fractional prompt_tokens fail as invalid usage',
    card: AUDIO_CARD,
    usage: chat(1.5, 0),
    expected: fails('invalid_usage'),
  },
  {
    name: 'negative completion_tokens fail as invalid usage',
    card: AUDIO_CARD,
    usage: chat(10, -1),
    expected: fails('invalid_usage'),
  },
];
