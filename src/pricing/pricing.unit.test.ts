import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryCard, arbitraryUsage } from '../../test/fixtures/pricing/pricing.arbitraries.js';
import { AUDIO_CARD, VERSIONED_CARDS } from '../../test/fixtures/pricing/pricing.fixtures.js';
import { AUDIO_GOLDEN_CASES } from '../../test/fixtures/pricing/pricing.golden.audio.js';
import {
  type GoldenCase,
  type GoldenLine,
  GOLDEN_CASES as OTHER_CASES,
} from '../../test/fixtures/pricing/pricing.golden.js';
import { formatUsd, parseUsd, type Usd } from '../lib/money.js';
import { priceUsage } from './engine.js';
import { escrowEstimate } from './escrow-estimate.js';
import { type CompiledRateCard, selectRateCard } from './rate-card.js';
import { BILLING_REASONS, type CostLine, isImageOperation, type PricingResult } from './types.js';

const GOLDEN_CASES = [...OTHER_CASES, ...AUDIO_GOLDEN_CASES];
const CANONICAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;

const cardOf = (c: GoldenCase['card']): CompiledRateCard | undefined =>
  c !== undefined && 'at' in c ? selectRateCard(VERSIONED_CARDS, Date.parse(c.at)) : c;

const keyOf = (line: CostLine): string =>
  `${line.meter}/${line.modality}` +
  (line.cache_ttl === null ? '' : `@${line.cache_ttl}`) +
  (line.tool_type === null ? '' : `#${line.tool_type}`) +
  (line.estimated ? ' est' : '');

const asGolden = (line: CostLine): GoldenLine => [keyOf(line), line.quantity, line.unit_price, line.amount];

describe('golden table', () => {
  it('has at least 40 cases', () => {
    expect(GOLDEN_CASES.length).toBeGreaterThanOrEqual(40);
  });

  it.each(GOLDEN_CASES.map((c) => [c.name, c] as const))('%s', (_name, golden) => {
    const result = priceUsage(cardOf(golden.card), golden.usage);
    if ('failed' in golden.expected) {
      expect(result.billing_status).toBe('failed');
      expect(result.billing_reason).toBe(golden.expected.failed);
      expect(result.lines).toEqual([]);
      expect(result.total).toBe('0');
    } else {
      expect(result.billing_reason).toBeNull();
      expect(result.billing_status).toBe('priced');
      expect(result.lines.map(asGolden)).toEqual(golden.expected.lines);
      expect(result.total).toBe(golden.expected.total);
    }
    if (golden.markers !== undefined) {
      expect([result.attribution.audio_input.marker, result.attribution.audio_output.marker]).toEqual(
        golden.markers,
      );
    }
  });
});

describe('attribution and provenance', () => {
  it('records each line with its card, row and interval', () => {
    const result = priceUsage(AUDIO_CARD, {
      operation: 'chat',
      prompt_tokens: 200_001,
      completion_tokens: 1,
    });
    expect(result.rate_card_id).toBe('audio-card');
    expect(result.lines.map((l) => l.provenance)).toEqual([
      {
        source: 'rate_card',
        rate_card_id: 'audio-card',
        rate_row_id: 'in-b2',
        revision: 1,
        effective_from: '2025-01-01T00:00:00Z',
        effective_to: null,
      },
      expect.objectContaining({ rate_row_id: 'out-b2' }),
    ]);
  });

  it('marks zero-rated lines with the rule, not a card', () => {
    const result = priceUsage(undefined, {
      operation: 'count_tokens',
      prompt_tokens: 9,
      completion_tokens: 0,
    });
    expect(result.lines[0]?.provenance).toEqual({ source: 'zero_rated', rule: 'count_tokens' });
  });

  it('keeps reasoning and audio counters whatever the outcome', () => {
    const result = priceUsage(AUDIO_CARD, {
      operation: 'chat',
      prompt_tokens: 100,
      completion_tokens: 50,
      reasoning_tokens: 40,
      audio_input_tokens: 2 ** 32,
      audio_output_tokens: 30,
      audio_requested: { input: true, output: true },
    });
    expect(result.billing_status).toBe('failed');
    expect(result.billing_detail).toContain('unreadable');
    expect(result.attribution).toEqual({
      reasoning_tokens: 40,
      audio_input: { marker: 'unreadable', tokens: null, raw: '4294967296' },
      audio_output: { marker: 'reported', tokens: 30 },
      carried_audio: true,
    });
  });

  it('names the failing meter, tier and prompt size in the detail', () => {
    const result = priceUsage(AUDIO_CARD, {
      operation: 'chat',
      tier: 'priority',
      prompt_tokens: 7,
      completion_tokens: 0,
    });
    expect(result.billing_detail).toBe(
      'card audio-card has no priority price for input_token/text at prompt size 7',
    );
  });
});

/** Every number in a pricing result is a count or a revision, never money. */
const NUMERIC_KEYS = new Set(['quantity', 'tokens', 'reasoning_tokens', 'revision']);
const MONEY_KEYS = new Set(['unit_price', 'amount', 'total']);

const checkNoNumericMoney = (value: unknown, key = ''): void => {
  if (MONEY_KEYS.has(key)) expect(typeof value).toBe('string');
  if (typeof value === 'number') expect(NUMERIC_KEYS.has(key), `number at "${key}"`).toBe(true);
  if (typeof value === 'bigint') expect.fail(`bigint at "${key}" cannot be serialized`);
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) checkNoNumericMoney(v, Array.isArray(value) ? key : k);
  }
};

const tokenTotals = (result: PricingResult) => {
  let input = 0;
  let output = 0;
  for (const line of result.lines) {
    if (line.meter === 'output_token') output += line.quantity;
    else if (line.meter !== 'request' && line.meter !== 'image' && line.meter !== 'tool_call')
      input += line.quantity;
  }
  return { input, output };
};

describe('properties over random cards and usages', () => {
  it('cost lines sum exactly to the total, in canonical decimals, with no float', () => {
    fc.assert(
      fc.property(arbitraryCard, arbitraryUsage, (card, usage) => {
        const result = priceUsage(card, usage);
        checkNoNumericMoney(result);
        expect(JSON.parse(JSON.stringify(result))).toEqual(result);
        expect(result.total).toMatch(CANONICAL);
        if (result.billing_status === 'failed') {
          expect(BILLING_REASONS).toContain(result.billing_reason);
          expect(result.lines).toEqual([]);
          expect(result.total).toBe('0');
          return;
        }
        let sum = 0n;
        for (const line of result.lines) {
          expect(line.amount).toMatch(CANONICAL);
          expect(line.unit_price).toMatch(CANONICAL);
          expect(Number.isSafeInteger(line.quantity) && line.quantity > 0).toBe(true);
          const amount = parseUsd(line.amount);
          expect(amount).toBe(parseUsd(line.unit_price) * BigInt(line.quantity));
          expect(formatUsd(amount)).toBe(line.amount);
          sum += amount;
        }
        expect(sum).toBe(parseUsd(result.total));
        expect(priceUsage(card, usage)).toEqual(result);
      }),
      { numRuns: 2000 },
    );
  });

  it('a priced token request bills every prompt and completion token exactly once', () => {
    fc.assert(
      fc.property(arbitraryCard, arbitraryUsage, (card, usage) => {
        const result = priceUsage(card, usage);
        fc.pre(result.billing_status === 'priced');
        fc.pre(usage.operation !== 'moderations' && !isImageOperation(usage.operation));
        expect(tokenTotals(result)).toEqual({ input: usage.prompt_tokens, output: usage.completion_tokens });
      }),
      { numRuns: 2000 },
    );
  });

  it('the escrow estimate covers the priced cost of the same shape', () => {
    fc.assert(
      fc.property(arbitraryCard, arbitraryUsage, (card, generated) => {
        const usage = { ...generated, cache_read_tokens: 0, cache_write_tokens: {}, tool_calls: {} };
        const result = priceUsage(card, usage);
        fc.pre(result.billing_status === 'priced');
        const hold = escrowEstimate(card, {
          operation: usage.operation,
          prompt_tokens: usage.prompt_tokens,
          max_output_tokens: usage.completion_tokens,
          image_count: usage.image_count ?? 0,
          request_count: usage.request_count ?? 1,
        });
        expect(hold.status).toBe('reserved');
        if (hold.status === 'reserved') expect(hold.amount >= (parseUsd(result.total) as Usd)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
