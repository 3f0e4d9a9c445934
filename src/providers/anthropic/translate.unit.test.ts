import { describe, expect, it } from 'vitest';
import { parseChatBody } from '../../edges/http/gateway/chat.js';
import type { CanonicalRequest } from '../contract.js';
import { countBody, messagesBody, preservedBody } from './translate.js';

// SPEC 4.1 rule 6 (primary to messages-style) and 4.2 rule 8 (the preservation envelope), golden.

const endpoint = { provider_model_id: 'claude-sonnet-4-5-20250929', max_output_tokens: 8_192 };
const chat = (body: Record<string, unknown>): CanonicalRequest =>
  parseChatBody({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], ...body });
const body = (req: CanonicalRequest) => {
  const t = messagesBody(req, endpoint);
  if (!t.ok) throw new Error(t.message);
  return t.body;
};
const fn = (name: string) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
});

describe('primary to messages-style translation (golden)', () => {
  it('the basic body: upstream model id, max_tokens, sampling, stop, end user, stream', () => {
    expect(
      body(
        chat({
          max_tokens: 100,
          temperature: 0.2,
          top_p: 0.9,
          stop: 'END',
          user: 'u-1',
          stream: true,
          messages: [
            { role: 'system', content: 'Be kind.' },
            { role: 'user', content: 'hi' },
          ],
        }),
      ),
    ).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 100,
      system: 'Be kind.',
      messages: [{ role: 'user', content: 'hi' }],
      stop_sequences: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      metadata: { user_id: 'u-1' },
      stream: true,
    });
  });

  it('max_tokens: the endpoint ceiling when absent, clamped when above it', () => {
    expect(body(chat({})).max_tokens).toBe(8_192);
    expect(body(chat({ max_tokens: 100_000 })).max_tokens).toBe(8_192);
    expect(messagesBody(chat({}), { ...endpoint, max_output_tokens: null })).toMatchObject({
      ok: true,
      body: { max_tokens: 4_096 },
    });
  });

  it('a message name is dropped on every role', () => {
    const b = body(
      chat({
        messages: [
          { role: 'system', name: 'sys', content: 'S.' },
          { role: 'user', name: 'alice', content: 'hi' },
          { role: 'assistant', name: 'bot', content: 'hello' },
        ],
      }),
    );
    expect(JSON.stringify(b)).not.toContain('alice');
    expect(b.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
  });

  it('response_format is steered by a system instruction after a blank line', () => {
    const b = body(
      chat({
        messages: [
          { role: 'system', content: 'S.' },
          { role: 'user', content: 'x' },
        ],
        response_format: { type: 'json_object' },
      }),
    );
    expect(b.system).toMatch(/^S\.\n\nRespond with a single valid JSON object/);
  });

  it('tool_choice: auto, required, none, a named function', () => {
    const tools = [fn('get_weather')];
    expect(body(chat({ tools, tool_choice: 'auto' })).tool_choice).toEqual({ type: 'auto' });
    expect(body(chat({ tools, tool_choice: 'required' })).tool_choice).toEqual({ type: 'any' });
    expect(body(chat({ tools, tool_choice: 'none' })).tool_choice).toEqual({ type: 'none' });
    expect(
      body(chat({ tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } })).tool_choice,
    ).toEqual({ type: 'tool', name: 'get_weather' });
    expect(body(chat({ tools })).tools).toEqual([
      { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it('parallel_tool_calls false: disable_parallel_tool_use on the choice, auto when none was given', () => {
    const tools = [fn('a')];
    expect(body(chat({ tools, parallel_tool_calls: false })).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(body(chat({ tools, tool_choice: 'required', parallel_tool_calls: false })).tool_choice).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    // Not with tool_choice none, and not without usable tools.
    expect(body(chat({ tools, tool_choice: 'none', parallel_tool_calls: false })).tool_choice).toEqual({
      type: 'none',
    });
    expect(body(chat({ parallel_tool_calls: false })).tool_choice).toBeUndefined();
    expect(body(chat({ tools: [], parallel_tool_calls: false })).tool_choice).toBeUndefined();
  });

  it('tool history: tool_calls to tool_use, results grouped into one user turn; echoed reasoning dropped', () => {
    const b = body(
      chat({
        messages: [
          { role: 'user', content: 'weather in Paris and Oslo?' },
          {
            role: 'assistant',
            content: '',
            reasoning_content: 'I should call the tool twice.',
            reasoning_signature: 'sig',
            tool_calls: [
              { id: 'toolu_1', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } },
              { id: 'toolu_2', type: 'function', function: { name: 'w', arguments: '{"city":"Oslo"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
          { role: 'tool', tool_call_id: 'toolu_2', content: '9C' },
        ],
      }),
    );
    expect(b.messages).toEqual([
      { role: 'user', content: 'weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'w', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'w', input: { city: 'Oslo' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '9C' },
        ],
      },
    ]);
    expect(JSON.stringify(b)).not.toContain('reasoning');
  });

  it('image_url parts return to image blocks; a per-part cache hint stays on its block', () => {
    const b = body(
      chat({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?', cache_control: { type: 'ephemeral' } },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            ],
          },
        ],
      }),
    );
    expect(b.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?', cache_control: { type: 'ephemeral' } },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        ],
      },
    ]);
  });

  it('refusals before any upstream call: non-JSON tool arguments, a non-http image url', () => {
    expect(
      messagesBody(
        chat({
          messages: [
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 't', type: 'function', function: { name: 'w', arguments: '{oops' } }],
            },
          ],
        }),
        endpoint,
      ),
    ).toMatchObject({ ok: false });
    expect(
      messagesBody(
        chat({
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }],
        }),
        endpoint,
      ),
    ).toMatchObject({ ok: false });
  });

  it('web_search_options becomes the hosted web search tool (routes without a reference candidate)', () => {
    expect(body(chat({ web_search_options: {} })).tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search' },
    ]);
  });
});

describe('the preservation envelope (SPEC 4.2 rule 8, golden)', () => {
  const raw = {
    model: 'claude-sonnet-4-5',
    max_tokens: 64_000,
    system: [{ type: 'text', text: 'Long policy.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    thinking: { type: 'enabled', budget_tokens: 2_048 },
    messages: [
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'hm', signature: 'EqQBCkgIAR' },
          { type: 'redacted_thinking', data: 'EmwKAhgB' },
          { type: 'text', text: 'a' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'again', cache_control: { type: 'ephemeral' } }] },
    ],
  };

  it('only the model id is rewritten, max_tokens clamped and the stream flag set; the rest is replayed byte for byte', () => {
    const built = preservedBody(raw, true, endpoint);
    expect(built).toEqual({ ...raw, model: 'claude-sonnet-4-5-20250929', max_tokens: 8_192, stream: true });
    // Key order and every other byte unchanged.
    expect(JSON.stringify(built)).toBe(
      JSON.stringify({ ...raw, model: 'claude-sonnet-4-5-20250929', max_tokens: 8_192 }).replace(
        /}$/,
        ',"stream":true}',
      ),
    );
    expect(preservedBody({ ...raw, max_tokens: 100 }, false, endpoint).max_tokens).toBe(100);
    expect('stream' in preservedBody({ ...raw, max_tokens: 100 }, false, endpoint)).toBe(false);
  });

  it('count_tokens bodies drop max_tokens and stream', () => {
    const request = {
      ...chat({}),
      preserved: { raw: { ...raw, stream: false }, beta: null, thinking: true },
    };
    const counted = countBody(request, endpoint);
    expect(counted.ok && counted.body).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      system: raw.system,
      thinking: raw.thinking,
      messages: raw.messages,
    });
  });
});
