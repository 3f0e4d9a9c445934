import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../lib/errors.js';
import { checkMessages, largestOutputLimit, outputLimit } from './body-rules.js';

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

describe('messages', () => {
  it('content parts and tool calls must be objects the gateway can read', () => {
    expect(paramOf(() => checkMessages([{ role: 'system', content: [null] }]))).toBe(
      'messages[0].content[0]',
    );
    expect(paramOf(() => checkMessages([{ role: 'user', content: [{ text: 'no type' }] }]))).toBe(
      'messages[0].content[0]',
    );
    expect(paramOf(() => checkMessages([{ role: 'user', content: 5 }]))).toBe('messages[0].content');
    expect(paramOf(() => checkMessages([{ role: 'assistant', content: null, tool_calls: [null] }]))).toBe(
      'messages[0].tool_calls[0]',
    );
    expect(
      paramOf(() => checkMessages([{ role: 'assistant', tool_calls: [{ id: 'c', function: 'f' }] }])),
    ).toBe('messages[0].tool_calls[0].function');
  });

  it('strings, null content beside tool calls and typed parts pass', () => {
    expect(() =>
      checkMessages([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }],
        },
        { role: 'tool', tool_call_id: 'c', content: 'ok' },
      ]),
    ).not.toThrow();
  });
});
