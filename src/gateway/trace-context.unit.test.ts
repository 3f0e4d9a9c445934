import { describe, expect, it } from 'vitest';
import { parseTraceparent, traceContextOf } from './trace-context.js';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const P = '00f067aa0ba902b7';

describe('SPEC 4.3: the trace a gateway request belongs to (W3C traceparent)', () => {
  it('reads a valid traceparent and gives the gateway span an id of its own', () => {
    expect(parseTraceparent(`00-${T}-${P}-01`)).toEqual({ traceId: T, parentSpanId: P });
    const c = traceContextOf(`00-${T}-${P}-00`, null)!;
    expect(c.traceId).toBe(T);
    expect(c.parentSpanId).toBe(P);
    expect(c.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(c.spanId).not.toBe(P);
    // A later version may append fields; version 00 may not.
    expect(parseTraceparent(`01-${T}-${P}-01-extra`)).toEqual({ traceId: T, parentSpanId: P });
  });

  it('ignores what the W3C rules refuse', () => {
    for (const bad of [
      `ff-${T}-${P}-01`,
      `00-${'0'.repeat(32)}-${P}-01`,
      `00-${T}-${'0'.repeat(16)}-01`,
      `00-${T.toUpperCase()}-${P}-01`,
      `00-${T}-${P}-01-extra`,
      `00-${T.slice(1)}-${P}-01`,
      '',
      ['a'],
      undefined,
      `00-${T}-${P}-01${' '.repeat(600)}`,
    ])
      expect(parseTraceparent(bad)).toBeNull();
  });

  it('starts a trace for a session without a traceparent, and none for a request with neither', () => {
    const c = traceContextOf(undefined, 'sess-1')!;
    expect(c.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(c.parentSpanId).toBe('');
    expect(traceContextOf(undefined, 'sess-1')!.traceId).not.toBe(c.traceId);
    expect(traceContextOf('garbage', null)).toBeNull();
  });
});
