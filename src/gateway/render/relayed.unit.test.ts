import { describe, expect, it } from 'vitest';
import { SseParser } from '../../lib/sse.js';
import { frameOf } from './relayed.js';

describe('relayed Responses events', () => {
  it('are written back so that a parser reads the same event and data, multi-line payloads included', () => {
    const events = [
      { event: 'response.created', data: '{"type":"response.created"}' },
      { event: undefined, data: '{"a":1}' },
      { event: 'response.output_text.delta', data: '{"delta":\n"x"}' },
    ];
    const parser = new SseParser();
    const text = events.map(frameOf).join('');
    expect(frameOf(events[0]!)).toBe('event: response.created\ndata: {"type":"response.created"}\n\n');
    expect([...parser.push(new TextEncoder().encode(text)), ...parser.end()]).toEqual(events);
  });
});
