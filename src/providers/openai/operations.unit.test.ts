import { describe, expect, it } from 'vitest';
import { TEXT_CARD } from '../../../test/fixtures/pricing/pricing.fixtures.js';
import { parseEmbeddingsBody, parseResponsesBody } from '../../edges/http/gateway/json-bodies.js';
import { pricingUsageOf } from '../../gateway/metering.js';
import { priceUsage } from '../../pricing/index.js';
import { embeddingsReply, embeddingsUsage, responsesReply, responsesUsage } from './operations.js';

describe('usage of the JSON operations', () => {
  it('embeddings usage is input only', () => {
    expect(embeddingsUsage({ prompt_tokens: 12, total_tokens: 12 })).toEqual({
      prompt_tokens: 12,
      completion_tokens: 0,
      total_tokens: 12,
    });
    expect(embeddingsUsage(null)).toBeNull();
  });

  it('responses usage maps input, output, cached and reasoning tokens', () => {
    expect(
      responsesUsage({
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 40 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 10 },
        total_tokens: 130,
      }),
    ).toEqual({
      prompt_tokens: 100,
      completion_tokens: 30,
      total_tokens: 130,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 10 },
    });
  });

  it('embeddings replies echo the catalog model; responses replies pass through', () => {
    const list = {
      object: 'list',
      data: [],
      model: 'text-embedding-3-small-2024',
      usage: { prompt_tokens: 1 },
    };
    expect(embeddingsReply('text-embedding-3-small')(list).body.model).toBe('text-embedding-3-small');
    const response = { object: 'response', model: 'gpt-4o-2024', service_tier: 'default', usage: null };
    expect(responsesReply(response)).toEqual({ body: response, usage: null, serviceTier: 'default' });
  });
});

describe('responses usage reaches pricing raw (SPEC 4.1 rule 10: judged there, never a silent 0)', () => {
  const request = parseResponsesBody({ model: 'gpt-4o', input: 'x' });
  const priced = (usage: Record<string, unknown>) =>
    priceUsage(TEXT_CARD, pricingUsageOf('responses', responsesUsage(usage)!, request, undefined));

  it.each([
    ['null', null],
    ['a digit string', '100'],
    ['a fraction', 2.5],
  ])('input_tokens %s fails billing instead of pricing the input at 0', (_name, input) => {
    expect(priced({ input_tokens: input, output_tokens: 30, total_tokens: 130 })).toMatchObject({
      billing_status: 'failed',
      billing_reason: 'invalid_usage',
    });
  });

  it('fields are renamed, values kept as sent', () => {
    expect(
      responsesUsage({
        input_tokens: null,
        output_tokens: '3',
        output_tokens_details: { reasoning_tokens: '1' },
      }),
    ).toMatchObject({
      prompt_tokens: null,
      completion_tokens: '3',
      completion_tokens_details: { reasoning_tokens: '1' },
    });
  });
});

describe('embeddings usage reaches pricing raw (SPEC 4.1 rule 10: judged there, never a silent 0)', () => {
  const request = parseEmbeddingsBody({ model: 'text-embedding-3-small', input: 'x' });
  const priced = (usage: Record<string, unknown>) =>
    priceUsage(TEXT_CARD, pricingUsageOf('embeddings', embeddingsUsage(usage)!, request, undefined));

  it.each([
    ['null', null],
    ['a digit string', '100'],
    ['a fraction', 2.5],
  ])('prompt_tokens %s fails billing instead of pricing the input at 0', (_name, input) => {
    expect(priced({ prompt_tokens: input, total_tokens: 100 })).toMatchObject({
      billing_status: 'failed',
      billing_reason: 'invalid_usage',
    });
  });

  it('a readable count is priced', () => {
    expect(priced({ prompt_tokens: 100, total_tokens: 100 })).toMatchObject({ billing_status: 'priced' });
  });
});
