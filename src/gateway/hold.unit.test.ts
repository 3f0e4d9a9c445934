import { describe, expect, it } from 'vitest';
import { unholdable, worstCaseOutput } from './hold.js';

// SPEC 8 "escrow hold": the output side of a hold is the most the endpoint can bill for.
describe('worstCaseOutput', () => {
  const endpoint = (max_output_tokens: number | null, context_length: number | null = null) => ({
    max_output_tokens,
    context_length,
  });

  it('the request limit, clamped to the registry ceiling', () => {
    expect(worstCaseOutput(100, endpoint(8_192))).toBe(100);
    expect(worstCaseOutput(64_000, endpoint(8_192))).toBe(8_192);
    expect(worstCaseOutput(64_000, endpoint(null))).toBe(64_000);
  });

  it('no limit: the ceiling, else the context window, else the messages-style default', () => {
    expect(worstCaseOutput(undefined, endpoint(8_192, 200_000))).toBe(8_192);
    expect(worstCaseOutput(undefined, endpoint(null, 128_000))).toBe(128_000);
    expect(worstCaseOutput(undefined, endpoint(null))).toBe(4_096);
  });
});

describe('unholdable (SPEC 8 escrow)', () => {
  const canonical = (operation: string, raw: Record<string, unknown>) =>
    ({ operation, raw, n: undefined }) as unknown as Parameters<typeof unholdable>[0];
  it('refuses a wallet hold for Responses context the upstream holds', () => {
    for (const f of ['previous_response_id', 'conversation', 'prompt'])
      expect(unholdable(canonical('responses', { [f]: 'x' })), f).toMatch(f);
  });
  it('holds an image request: its prompt is its text, not stored context', () => {
    expect(unholdable(canonical('images', { prompt: 'a cat' }))).toBeUndefined();
  });
});
