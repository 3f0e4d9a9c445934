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

describe('SseParser line ends and long lines', () => {
  const encode = (s: string) => new TextEncoder().encode(s);

  it('takes a lone CR as a line end, and a CRLF split across two reads as one', () => {
    const p = new SseParser();
    expect(p.push(encode('data: a\r\rdata: b\r'))).toEqual([{ event: undefined, data: 'a' }]);
    expect(p.push(encode('\n\r\n'))).toEqual([{ event: undefined, data: 'b' }]);
  });

  it('gives the same events for CR, LF and CRLF line ends, however the bytes are split', () => {
    const body = (eol: string) =>
      ['event: e', 'data: {"x":"é 😀"}', '', ': comment', 'data: 1', 'data: 2', '', ''].join(eol);
    const expected = new SseParser().push(encode(body('\n')));
    for (const eol of ['\r', '\r\n']) {
      const bytes = encode(body(eol));
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 10 }), (cuts) => {
          const p = new SseParser();
          const got = [];
          let from = 0;
          for (const c of [...[...new Set(cuts)].sort((a, b) => a - b), bytes.length]) {
            got.push(...p.push(bytes.slice(from, c)));
            from = c;
          }
          got.push(...p.end());
          expect(got).toEqual(expected);
        }),
      );
    }
  });

  it('is linear in its input: one 16 MB data line in 16 KiB reads parses in well under a second', () => {
    // The quadratic parser rescanned the whole pending line on every read: about 9 s here.
    const size = 16 * 1024 * 1024;
    const piece = 16 * 1024;
    const chunk = encode('x'.repeat(piece));
    const p = new SseParser();
    const started = performance.now();
    p.push(encode('data: '));
    for (let sent = 0; sent < size; sent += piece) expect(p.push(chunk)).toEqual([]);
    const [event] = p.push(encode('\n\n'));
    const elapsed = performance.now() - started;
    expect(event?.data.length).toBe(size);
    // Generous for a shared 2-core machine; the measured figure is printed by bench/sse.
    expect(elapsed).toBeLessThan(1_000);
  });
});
