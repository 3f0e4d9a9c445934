import { describe, expect, it } from 'vitest';
import { renderPrimaryChunk } from '../../gateway/render/primary.js';
import type { CanonicalChunk } from '../contract.js';
import { StreamFailure } from '../provider.js';
import { ChunkMapper, type MessagesEvent } from './stream.js';

// SPEC 4.1 rules 5 and 7, streamed: a messages-style event stream on the primary dialect.

const ev = (data: Record<string, unknown>): MessagesEvent => ({ type: data.type as string, data });
const start = (index: number, content_block: Record<string, unknown>) =>
  ev({ type: 'content_block_start', index, content_block });
const delta = (index: number, d: Record<string, unknown>) =>
  ev({ type: 'content_block_delta', index, delta: d });
const stop = (index: number) => ev({ type: 'content_block_stop', index });

const script: MessagesEvent[] = [
  ev({
    type: 'message_start',
    message: {
      id: 'm',
      usage: {
        input_tokens: 10,
        cache_read_input_tokens: 5,
        cache_creation_input_tokens: 0,
        output_tokens: 1,
      },
    },
  }),
  ev({ type: 'ping' }),
  start(0, { type: 'thinking', thinking: '', signature: '' }),
  delta(0, { type: 'thinking_delta', thinking: 'Hmm' }),
  delta(0, { type: 'signature_delta', signature: 'sig-A' }),
  stop(0),
  start(1, { type: 'redacted_thinking', data: 'opaque' }),
  stop(1),
  start(2, { type: 'text', text: '' }),
  delta(2, { type: 'text_delta', text: 'Calling.' }),
  stop(2),
  start(3, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
  delta(3, { type: 'input_json_delta', partial_json: '{"query":"q"}' }),
  stop(3),
  start(4, { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] }),
  stop(4),
  start(5, { type: 'thinking', thinking: '', signature: '' }),
  delta(5, { type: 'thinking_delta', thinking: 'More' }),
  delta(5, { type: 'signature_delta', signature: 'sig-B' }),
  stop(5),
  start(6, { type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: {} }),
  delta(6, { type: 'input_json_delta', partial_json: '{"city":' }),
  delta(6, { type: 'input_json_delta', partial_json: '"Paris"}' }),
  stop(6),
  ev({
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: 42, output_tokens_details: { thinking_tokens: 20 } },
  }),
  ev({ type: 'message_stop' }),
];

const mapAll = (events: MessagesEvent[]) => {
  const mapper = new ChunkMapper();
  const chunks: CanonicalChunk[] = events.flatMap((e) => mapper.map(e));
  return { chunks, stopped: mapper.stopped };
};
const who = { id: 'chatcmpl-1', created: 1, model: 'claude' };

describe('messages-style stream to the primary dialect', () => {
  const { chunks, stopped } = mapAll(script);
  const frames = chunks.map((c) => renderPrimaryChunk(c, who, true)).filter((f) => f !== null);
  const deltas = frames.flatMap((f) =>
    (f.choices as { delta: Record<string, unknown> }[]).map((c) => c.delta),
  );

  it('the opening delta carries role; block boundaries and redacted thinking produce no frame', () => {
    expect(deltas[0]).toEqual({ role: 'assistant' });
    expect(JSON.stringify(frames)).not.toMatch(
      /opaque|block_start|thinking_stop|openingUsage|content_index|blocks/,
    );
    expect(stopped).toBe(true);
  });

  it('one reasoning_signature delta per thinking block, in order, without block boundaries', () => {
    expect(deltas.filter((d) => d.reasoning_signature).map((d) => d.reasoning_signature)).toEqual([
      'sig-A',
      'sig-B',
    ]);
    expect(
      deltas
        .filter((d) => d.reasoning_content)
        .map((d) => d.reasoning_content)
        .join(''),
    ).toBe('HmmMore');
  });

  it('tool_calls indexes count client tool blocks from 0; a server tool adds no tool call (the primary wire has none without id, type and name)', () => {
    const calls = deltas.flatMap((d) => (d.tool_calls as Record<string, unknown>[] | undefined) ?? []);
    expect(calls).toEqual([
      { index: 0, id: 'toolu_9', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"city":' } },
      { index: 0, function: { arguments: '"Paris"}' } },
    ]);
  });

  it('a tool without parameters (no argument fragment, or only empty ones) closes with arguments {}, as buffered', () => {
    const mapper = new ChunkMapper();
    const calls = [
      start(0, { type: 'tool_use', id: 'toolu_1', name: 'now', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '' }),
      stop(0),
      start(1, { type: 'tool_use', id: 'toolu_2', name: 'now', input: {} }),
      stop(1),
      start(2, { type: 'tool_use', id: 'toolu_3', name: 'get_weather', input: {} }),
      delta(2, { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' }),
      stop(2),
    ]
      .flatMap((e) => mapper.map(e))
      .flatMap((c) => c.delta.tool_calls ?? []);
    const joined = new Map<number, string>();
    for (const c of calls) joined.set(c.index, (joined.get(c.index) ?? '') + (c.function.arguments ?? ''));
    expect([...joined]).toEqual([
      [0, '{}'],
      [1, '{}'],
      [2, '{"city":"Oslo"}'],
    ]);
  });

  it('finish reason, then a synthesized terminal usage chunk with reasoning_tokens and cached_tokens', () => {
    expect(frames.at(-2)).toMatchObject({ choices: [{ finish_reason: 'tool_calls', delta: {} }] });
    expect(frames.at(-1)).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'claude',
      choices: [],
      usage: {
        prompt_tokens: 15,
        completion_tokens: 42,
        total_tokens: 57,
        prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 20 },
      },
    });
  });

  it('the input side stated at message_start rides along for pricing a cut stream', () => {
    expect(chunks[0]!.openingUsage).toMatchObject({ prompt_tokens: 15, completion_tokens: 1 });
  });

  it('an error event mid-stream throws an in-band StreamFailure with the upstream type', () => {
    const mapper = new ChunkMapper();
    expect(() =>
      mapper.map(ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })),
    ).toThrow(StreamFailure);
  });
});
