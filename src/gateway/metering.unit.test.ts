import { describe, expect, it } from 'vitest';
import { parseChatBody } from '../edges/http/gateway/chat.js';
import type { Usage } from '../providers/contract.js';
import { observedUsage, pricingUsageOf } from './metering.js';

const request = parseChatBody({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
const base: Usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

describe('messages-style counters for the pricing engine', () => {
  it('cache writes by lifetime from the tier breakdown; cache reads as cached_tokens', () => {
    const usage: Usage = {
      ...base,
      prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 30 },
      breakdown: { cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 } },
    };
    expect(pricingUsageOf('chat', usage, request, undefined)).toMatchObject({
      cache_read_tokens: 20,
      cache_write_tokens: { '5m': 10, '1h': 20 },
    });
  });

  it('without a breakdown, writes count at the default five-minute lifetime; none, no writes', () => {
    const usage: Usage = { ...base, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 7 } };
    expect(pricingUsageOf('chat', usage, request, undefined).cache_write_tokens).toEqual({ '5m': 7 });
    expect(pricingUsageOf('chat', base, request, undefined).cache_write_tokens).toBeUndefined();
  });
});

describe('a stream that ended without its usage report', () => {
  it('keeps the input side the upstream stated and estimates the relayed output', () => {
    const opening: Usage = { prompt_tokens: 1000, completion_tokens: 1, total_tokens: 1001 };
    expect(observedUsage(opening, 50, 'x'.repeat(40))).toEqual({
      prompt_tokens: 1000,
      completion_tokens: 10,
      total_tokens: 1010,
    });
  });

  it('with nothing stated, both sides are estimated from bytes', () => {
    expect(observedUsage(null, 40, 'x'.repeat(8))).toEqual({
      prompt_tokens: 10,
      completion_tokens: 2,
      total_tokens: 12,
    });
  });
});
