import { describe, expect, it } from 'vitest';
import {
  AUDIO_CARD,
  IMAGE_TOKEN_CARD,
  INPUT_ONLY_CARD,
  REQUEST_CARD,
  REQUEST_PRICED_IMAGE_CARD,
  TEXT_CARD,
} from '../../test/fixtures/pricing/pricing.fixtures.js';
import { parseUsd } from '../lib/money.js';
import { type EscrowShape, escrowEstimate } from './escrow-estimate.js';
import type { CompiledRateCard } from './rate-card.js';

const chat = (prompt: number, maxOutput: number, extra: Partial<EscrowShape> = {}): EscrowShape => ({
  operation: 'chat',
  prompt_tokens: prompt,
  max_output_tokens: maxOutput,
  ...extra,
});

// Amounts multiplied out by hand from pricing.fixtures.ts.
const RESERVED: readonly [string, CompiledRateCard, EscrowShape, string, string[]][] = [
  [
    'audio rates lift both token meters',
    AUDIO_CARD,
    chat(1000, 500),
    '0.08',
    ['input_token/audio', 'output_token/audio'],
  ],
  [
    'a text-only card reserves at text rates',
    TEXT_CARD,
    chat(1000, 500),
    '0.00045',
    ['input_token/text', 'output_token/text'],
  ],
  [
    'the prompt estimate chooses the band',
    AUDIO_CARD,
    chat(300_000, 100),
    '12.008',
    ['input_token/audio', 'output_token/audio'],
  ],
  [
    'a tier without audio rates reserves at text',
    AUDIO_CARD,
    chat(1000, 500, { tier: 'flex' }),
    '0.00525',
    ['input_token/text', 'output_token/text'],
  ],
  [
    'image rates are candidates for the highest rate too',
    IMAGE_TOKEN_CARD,
    { operation: 'image_edit', prompt_tokens: 1200, max_output_tokens: 4160, image_count: 1 },
    '0.1784',
    ['input_token/image', 'output_token/image'],
  ],
  [
    'request-priced images reserve per image',
    REQUEST_PRICED_IMAGE_CARD,
    { operation: 'image_generation', prompt_tokens: 50, max_output_tokens: 0, image_count: 2 },
    '0.08',
    ['request/text'],
  ],
  [
    'one image when n is not given',
    REQUEST_PRICED_IMAGE_CARD,
    { operation: 'image_generation', prompt_tokens: 0, max_output_tokens: 0 },
    '0.04',
    ['request/text'],
  ],
  [
    'a per-request fee is reserved',
    REQUEST_CARD,
    chat(100, 100),
    '0.0008',
    ['input_token/text', 'output_token/text', 'request/text'],
  ],
  [
    'a zero output ceiling needs no output price',
    INPUT_ONLY_CARD,
    chat(10, 0),
    '0.00001',
    ['input_token/text'],
  ],
  [
    'moderations reserve nothing',
    AUDIO_CARD,
    { operation: 'moderations', prompt_tokens: 500, max_output_tokens: 0 },
    '0',
    [],
  ],
];

describe('escrowEstimate', () => {
  it.each(RESERVED)('%s', (_name, card, shape, amount, meters) => {
    const hold = escrowEstimate(card, shape);
    expect(hold.status).toBe('reserved');
    if (hold.status !== 'reserved') return;
    expect(hold.amount_text).toBe(amount);
    let sum = 0n;
    for (const line of hold.lines) {
      expect(parseUsd(line.amount)).toBe(parseUsd(line.unit_price) * BigInt(line.quantity));
      sum += parseUsd(line.amount);
    }
    expect(hold.amount).toBe(sum);
    expect(hold.lines.map((l) => `${l.meter}/${l.modality}`)).toEqual(meters);
  });

  it('is unpriced without a card, without a needed price, or with a broken shape', () => {
    expect(escrowEstimate(undefined, chat(1, 1))).toMatchObject({
      status: 'unpriced',
      reason: 'no_rate_card',
    });
    expect(escrowEstimate(INPUT_ONLY_CARD, chat(10, 10))).toMatchObject({
      status: 'unpriced',
      reason: 'missing_price',
      detail: 'card input-only has no standard price for output_token at prompt size 10',
    });
    expect(escrowEstimate(AUDIO_CARD, chat(1.5, 1))).toMatchObject({
      status: 'unpriced',
      reason: 'invalid_usage',
    });
    expect(escrowEstimate(AUDIO_CARD, chat(1, 1, { tier: 'priority' }))).toMatchObject({
      reason: 'missing_price',
    });
  });
});
