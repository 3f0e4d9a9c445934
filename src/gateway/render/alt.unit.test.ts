import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import type { CanonicalChunk, CanonicalReply, Usage } from '../../providers/contract.js';
import { altStopReason, altUsage, renderAltErrorEnvelope, renderAltReply } from './alt.js';
import { AltStreamRenderer } from './alt-stream.js';

// SPEC 4.2 rules 3-6 and 7.2: the alternate dialect's reply, usage, event stream and errors.

const who = { id: 'msg_1', created: 1, model: 'claude-sonnet' };
const usage: Usage = {
  prompt_tokens: 30,
  completion_tokens: 9,
  total_tokens: 39,
  prompt_tokens_details: { cached_tokens: 8, cache_write_tokens: 2 },
  completion_tokens_details: { reasoning_tokens: 4 },
  breakdown: {
    cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 0 },
    server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 },
  },
};

/** Parses the frames of one stream into [event, data] pairs. */
const events = (frames: string[]) =>
  frames.map((f) => {
    const [line1, line2] = f.trimEnd().split('\n');
    return [line1!.slice('event: '.length), JSON.parse(line2!.slice('data: '.length))] as [
      string,
      Record<string, unknown>,
    ];
  });
const names = (frames: string[]) =>
  events(frames).map(([e, d]) =>
    e === 'content_block_delta' ? `delta:${(d.delta as { type: string }).type}` : e,
  );

describe('usage: one serializer', () => {
  it('input_tokens excludes both cache classes; breakdown, tier, server tools and thinking when known', () => {
    expect(altUsage(usage, 'priority')).toEqual({
      input_tokens: 20,
      output_tokens: 9,
      cache_creation_input_tokens: 2,
      cache_read_input_tokens: 8,
      cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 0 },
      service_tier: 'priority',
      server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 },
      output_tokens_details: { thinking_tokens: 4 },
    });
  });

  it('a reference upstream usage: cached_tokens become cache reads; a standard tier is not stated', () => {
    expect(
      altUsage(
        {
          prompt_tokens: 100,
          completion_tokens: 5,
          total_tokens: 105,
          prompt_tokens_details: { cached_tokens: 64 },
        },
        'default',
      ),
    ).toEqual({
      input_tokens: 36,
      output_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 64,
    });
  });
});

describe('stop reasons (SPEC 4.2 rule 3)', () => {
  it.each([
    ['stop', null, 'end_turn'],
    ['length', null, 'max_tokens'],
    ['tool_calls', null, 'tool_use'],
    ['pause_turn', null, 'pause_turn'],
    ['refusal', null, 'refusal'],
    ['content_filter', null, 'end_turn'],
    ['something_new', null, 'end_turn'],
    ['stop', '###', 'stop_sequence'],
  ])('%s (sequence %s) -> %s', (finish, seq, expected) => {
    expect(altStopReason(finish, seq)).toBe(expected);
  });
});

describe('buffered reply', () => {
  it('messages-style blocks at their original positions', () => {
    const reply: CanonicalReply = {
      id: 'up',
      created: 0,
      model: 'up',
      message: { role: 'assistant', content: 'a' },
      finishReason: 'stop',
      stopSequence: '###',
      usage,
      blocks: [
        { type: 'thinking', thinking: '', signature: 's' },
        { type: 'redacted_thinking', data: 'd' },
        { type: 'text', text: 'a' },
      ],
    };
    expect(renderAltReply(reply, who)).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet',
      content: reply.blocks,
      stop_reason: 'stop_sequence',
      stop_sequence: '###',
      usage: altUsage(usage),
    });
  });

  it('a reference upstream: thinking without a signature is omitted; tool calls become tool_use with ids kept', () => {
    const reply: CanonicalReply = {
      id: 'chatcmpl-up',
      created: 0,
      model: 'gpt',
      message: {
        role: 'assistant',
        content: 'Checking.',
        reasoning_content: 'unsigned thoughts',
        tool_calls: [{ id: 'call_AbC', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }],
      },
      finishReason: 'tool_calls',
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      raw: { service_tier: 'default' },
    };
    expect(renderAltReply(reply, who)).toMatchObject({
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_AbC', name: 'f', input: { x: 1 } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 3, output_tokens: 2 },
    });
  });
});

describe('event stream', () => {
  const render = (chunks: CanonicalChunk[], end: Usage | null | 'error') => {
    const r = new AltStreamRenderer(who);
    const frames = chunks.flatMap((c) => r.chunk(c));
    return [
      ...frames,
      ...(end === 'error' ? r.error(new ServiceError('upstream_stream_error', 'cut')) : r.end(end)),
    ];
  };
  const opening: Usage = {
    prompt_tokens: 12,
    completion_tokens: 1,
    total_tokens: 13,
    prompt_tokens_details: { cached_tokens: 2 },
  };

  it('the documented sequence: reasoning blocks, adjacent text blocks kept apart, tool input deltas', () => {
    const frames = render(
      [
        { delta: { role: 'assistant' }, openingUsage: opening },
        { delta: {}, block: { type: 'thinking_start' } },
        { delta: { reasoning_content: 'hm' } },
        { delta: { reasoning_signature: 'sig' } },
        { delta: {}, block: { type: 'thinking_stop' } },
        { delta: {}, block: { type: 'redacted_thinking', data: 'opaque' } },
        { delta: {}, block: { type: 'text_start' } },
        { delta: { content: 'one' } },
        { delta: {}, block: { type: 'text_start' } },
        { delta: { content: 'two' } },
        {
          delta: {
            tool_calls: [
              { index: 0, id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '' } },
            ],
          },
        },
        { delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] } },
        { delta: {}, finishReason: 'tool_calls' },
      ],
      usage,
    );
    expect(names(frames)).toEqual([
      'message_start',
      'content_block_start',
      'delta:thinking_delta',
      'delta:signature_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_stop',
      'content_block_start',
      'delta:text_delta',
      'content_block_stop',
      'content_block_start',
      'delta:text_delta',
      'content_block_stop',
      'content_block_start',
      'delta:input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const parsed = events(frames);
    expect(parsed[0]![1]).toMatchObject({
      message: {
        id: 'msg_1',
        model: 'claude-sonnet',
        content: [],
        usage: { input_tokens: 10, output_tokens: 0, cache_read_input_tokens: 2 },
      },
    });
    expect(parsed[5]![1]).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'redacted_thinking', data: 'opaque' },
    });
    expect(parsed.at(-2)![1]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: altUsage(usage),
    });
    expect(frames.join('')).not.toContain('[DONE]');
  });

  it('input_tokens reads 0 when no usage is known at message open', () => {
    const parsed = events(render([{ delta: { role: 'assistant' } }, { delta: { content: 'x' } }], usage));
    expect(parsed[0]![1]).toMatchObject({ message: { usage: { input_tokens: 0, output_tokens: 0 } } });
  });

  it('thinking from a non-messages-style upstream still opens a thinking block, without signature_delta', () => {
    expect(
      names(render([{ delta: { reasoning_content: 'r' } }, { delta: { content: 'a' } }], usage)),
    ).toEqual([
      'message_start',
      'content_block_start',
      'delta:thinking_delta',
      'content_block_stop',
      'content_block_start',
      'delta:text_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('a stream with no content opens at the end with the known terminal counts', () => {
    const parsed = events(
      render([{ delta: { role: 'assistant' } }, { delta: {}, finishReason: 'stop' }], usage),
    );
    expect(parsed.map(([e]) => e)).toEqual(['message_start', 'message_delta', 'message_stop']);
    expect(parsed[0]![1]).toMatchObject({
      message: { usage: { input_tokens: 20, output_tokens: 0, cache_read_input_tokens: 8 } },
    });
    expect(parsed[1]![1]).toMatchObject({ usage: { input_tokens: 20, output_tokens: 9 } });
  });

  it('a stream cut before terminal usage closes with the message_start input counts and output_tokens 0', () => {
    const parsed = events(
      render([{ delta: { role: 'assistant' }, openingUsage: opening }, { delta: { content: 'x' } }], null),
    );
    expect(parsed.at(-2)![1]).toMatchObject({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn' },
      usage: { input_tokens: 10, output_tokens: 0, cache_read_input_tokens: 2 },
    });
  });

  it('a failure after the stream began is one error event with api_error, and nothing after it', () => {
    const frames = render([{ delta: { content: 'partial' } }], 'error');
    expect(events(frames).at(-1)).toEqual([
      'error',
      { type: 'error', error: { type: 'api_error', message: 'cut' } },
    ]);
    expect(names(frames)).not.toContain('message_stop');
  });

  it('server-tool argument deltas without an id have no block to land in', () => {
    expect(
      names(render([{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"q":1}' } }] } }], usage)),
    ).toEqual(['message_start', 'message_delta', 'message_stop']);
  });
});

describe('error envelope (SPEC 7.2)', () => {
  it('type error, an error object; several attempts under error.svc.attempts; no request id', () => {
    const attempts = [{ source: 'a/m', kind: 'UpstreamStatus', status_code: 503, message: 'x' }];
    expect(
      renderAltErrorEnvelope(new ServiceError('upstream_error', 'all failed', { details: { attempts } })),
    ).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'all failed', svc: { attempts } },
    });
    expect(renderAltErrorEnvelope(new ServiceError('no_compatible_candidate', 'none'))).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'none' },
    });
  });
});
