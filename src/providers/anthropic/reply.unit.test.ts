import { describe, expect, it } from 'vitest';
import { renderPrimaryReply } from '../../gateway/render/primary.js';
import { messagesReply } from './reply.js';

// SPEC 4.1 rule 7, buffered: what a messages-style reply looks like on the primary dialect.

const usage = {
  input_tokens: 10,
  cache_creation_input_tokens: 4,
  cache_read_input_tokens: 6,
  cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 0 },
  output_tokens: 30,
  output_tokens_details: { thinking_tokens: 12 },
  server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 },
  service_tier: 'standard',
};
const who = { id: 'chatcmpl-1', created: 1, model: 'claude-sonnet' };

const upstream = (content: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'msg_up',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content,
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage,
  ...extra,
});

describe('buffered messages-style reply', () => {
  it('one thinking block: reasoning_content and reasoning_signature; cached_tokens; reasoning_tokens', () => {
    const reply = messagesReply(
      upstream([
        { type: 'thinking', thinking: 'Think.', signature: 'sig-1' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Hello' },
        { type: 'text', text: ' world' },
      ]),
      'x',
    )!;
    const rendered = renderPrimaryReply(reply, who);
    expect(rendered).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'claude-sonnet',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Hello world',
            reasoning_content: 'Think.',
            reasoning_signature: 'sig-1',
          },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: 20,
        completion_tokens: 30,
        total_tokens: 50,
        prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 4 },
        completion_tokens_details: { reasoning_tokens: 12 },
      },
    });
    // Provider-internal fields never reach the client; redacted thinking has no representation.
    const text = JSON.stringify(rendered);
    for (const internal of [
      'content_blocks',
      'blocks',
      'breakdown',
      'opaque',
      'stop_sequence',
      'server_tool_use',
    ])
      expect(text).not.toContain(internal);
  });

  it('several thinking blocks: only the joined reasoning_content', () => {
    const reply = messagesReply(
      upstream(
        [
          { type: 'thinking', thinking: 'A.', signature: 's1' },
          { type: 'tool_use', id: 'toolu_1', name: 'f', input: { q: 1 } },
          { type: 'thinking', thinking: 'B.', signature: 's2' },
        ],
        { stop_reason: 'tool_use' },
      ),
      'x',
    )!;
    expect(reply.message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'A.B.',
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"q":1}' } }],
    });
    expect(reply.finishReason).toBe('tool_calls');
  });

  it('stop reasons: stop_sequence names the sequence; max_tokens is length; refusal and pause_turn kept', () => {
    const seq = messagesReply(
      upstream([{ type: 'text', text: 'a' }], { stop_reason: 'stop_sequence', stop_sequence: '###' }),
      'x',
    )!;
    expect([seq.finishReason, seq.stopSequence]).toEqual(['stop', '###']);
    expect(messagesReply(upstream([], { stop_reason: 'max_tokens' }), 'x')!.finishReason).toBe('length');
    const refusal = messagesReply(upstream([], { stop_reason: 'refusal' }), 'x')!;
    expect(refusal.finishReason).toBe('refusal');
    expect(renderPrimaryReply(refusal, who)).toMatchObject({
      choices: [{ finish_reason: 'content_filter' }],
    });
  });

  it('server-tool blocks are skipped; their request counts stay in the internal breakdown', () => {
    const reply = messagesReply(
      upstream([
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
        { type: 'text', text: 'Found it.' },
      ]),
      'x',
    )!;
    expect(reply.blocks).toEqual([{ type: 'text', text: 'Found it.' }]);
    expect(reply.message.tool_calls).toBeUndefined();
    expect(reply.usage?.breakdown?.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
  });
});
