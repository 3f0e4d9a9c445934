import { describe, expect, it } from 'vitest';
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
