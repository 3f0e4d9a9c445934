import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../lib/errors.js';
import { largestOutputLimit, outputLimit } from './body-rules.js';

// What the gateway reads in a body is refused at the edge when it cannot read it (SPEC 4.1 rule 10, 8).

const paramOf = (fn: () => unknown): string | null => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError && err.status === 400) return err.param;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('output limits', () => {
  it('absent, null or a positive safe integer', () => {
    expect(outputLimit({}, 'max_tokens')).toBeUndefined();
    expect(outputLimit({ max_tokens: null }, 'max_tokens')).toBeUndefined();
    expect(outputLimit({ max_tokens: 1 }, 'max_tokens')).toBe(1);
    expect(outputLimit({ max_tokens: Number.MAX_SAFE_INTEGER }, 'max_tokens')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('1e308, -1, 0, -0, 0.5, 2^53, Infinity and strings are refused naming the field', () => {
    for (const v of [1e308, -1, 0, -0, 0.5, 2 ** 53, Number.POSITIVE_INFINITY, '5', true, [5]])
      expect(paramOf(() => outputLimit({ max_output_tokens: v }, 'max_output_tokens'))).toBe(
        'max_output_tokens',
      );
  });

  it('the larger of the limits stated', () => {
    const fields = ['max_tokens', 'max_completion_tokens'];
    expect(largestOutputLimit({ max_tokens: 5, max_completion_tokens: 900 }, fields)).toBe(900);
    expect(largestOutputLimit({ max_completion_tokens: 7 }, fields)).toBe(7);
    expect(paramOf(() => largestOutputLimit({ max_tokens: 5, max_completion_tokens: -1 }, fields))).toBe(
      'max_completion_tokens',
    );
  });
});
