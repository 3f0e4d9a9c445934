import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';

describe('SseParser', () => {
  it('parses data and named events, CRLF, comments and multi-line data', () => {
    const p = new SseParser();
    const text =
      ': keep-alive\r\ndata: {"a":1}\r\n\r\nevent: message_start\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
    expect(p.push(new TextEncoder().encode(text))).toEqual([
      { event: undefined, data: '{"a":1}' },
      { event: 'message_start', data: 'line1\nline2' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('gives the same events however the bytes are split', () => {
    const text = 'data: {"x":"é ü 😀"}\n\nevent: e\ndata: 2\n\ndata: [DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    const whole = new SseParser().push(bytes);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 8 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const p = new SseParser();
        const got = [];
        let from = 0;
        for (const c of [...points, bytes.length]) {
          got.push(...p.push(bytes.slice(from, c)));
          from = c;
        }
        got.push(...p.end());
        expect(got).toEqual(whole);
      }),
    );
  });

  it('flushes a last event that lacks its blank line at end of input', () => {
    const p = new SseParser();
    expect(p.push(new TextEncoder().encode('data: tail'))).toEqual([]);
    expect(p.end()).toEqual([{ event: undefined, data: 'tail' }]);
  });
});
