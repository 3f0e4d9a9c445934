import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../../gateway/count-tokens.js';
import { ServiceError } from '../../../lib/errors.js';
import { parseAltBody } from './parse.js';

// SPEC 4.2 rules 1, 7 and 8: an alternate request as the internal body plus its preservation envelope.

const messages = { model: 'claude-sonnet', max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] };
const parse = (body: Record<string, unknown>, beta: string | null = null) =>
  parseAltBody({ ...messages, ...body }, { route: '/alt/v1/messages', beta });
const refused = (body: Record<string, unknown>) => {
  try {
    parse(body);
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    return err as ServiceError;
  }
  throw new Error('expected a refusal');
};

describe('request fields (rule 1)', () => {
  it('max_tokens is required: 400 invalid_request_error, no default', () => {
    const err = refused({ max_tokens: undefined });
    expect(err).toMatchObject({ code: 'invalid_request_error', status: 400, param: 'max_tokens' });
    expect(refused({ max_tokens: 0 }).param).toBe('max_tokens');
    expect(refused({ max_tokens: 'ten' }).param).toBe('max_tokens');
  });

  it('count_tokens: max_tokens not required and dropped from the internal body', () => {
    const c = parseAltBody(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
      {
        route: '/alt/v1/messages/count_tokens',
        beta: null,
      },
    );
    expect(c.operation).toBe('count_tokens');
    expect(c.raw.max_tokens).toBeUndefined();
    expect(estimateTokens(c)).toBe(Math.ceil(Buffer.byteLength(JSON.stringify(c.raw)) / 4));
  });

  it('system, stop_sequences, sampling, metadata.user_id, stream, and the internal body shape', () => {
    const c = parse({
      system: 'Be brief.',
      stop_sequences: ['###'],
      temperature: 0.5,
      top_p: 0.8,
      metadata: { user_id: 'end-user-1' },
      stream: true,
    });
    expect(c).toMatchObject({
      route: '/alt/v1/messages',
      model: 'claude-sonnet',
      stream: true,
      maxTokens: 256,
      temperature: 0.5,
      topP: 0.8,
      stop: ['###'],
      endUserId: 'end-user-1',
    });
    expect(c.raw).toEqual({
      model: 'claude-sonnet',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
      max_tokens: 256,
      stream: true,
      temperature: 0.5,
      top_p: 0.8,
      stop: ['###'],
      user: 'end-user-1',
    });
  });
});

describe('tools and images (rule 7)', () => {
  it('tool_choice: auto, any, none, tool; disable_parallel_tool_use independently of the choice', () => {
    expect(parse({ tool_choice: { type: 'auto' } }).toolChoice).toBe('auto');
    expect(parse({ tool_choice: { type: 'any' } }).toolChoice).toBe('required');
    expect(parse({ tool_choice: { type: 'none', disable_parallel_tool_use: true } })).toMatchObject({
      toolChoice: 'none',
      parallelToolCalls: false,
    });
    expect(
      parse({ tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true } }),
    ).toMatchObject({
      toolChoice: { type: 'function', function: { name: 'f' } },
      parallelToolCalls: false,
    });
  });

  it('custom tools become function tools; server tools go through as they are', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    expect(
      parse({
        tools: [
          { name: 'get_weather', description: 'Weather.', input_schema: schema },
          { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
        ],
      }).tools,
    ).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Weather.', parameters: schema } },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
    ]);
  });

  it('tool_use and tool_result ids are preserved byte for byte', () => {
    const id = 'toolu_01A09q90qw90lq917835lq9 ∆';
    const c = parse({
      messages: [
        { role: 'user', content: 'w?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id, name: 'w', input: { c: 'P' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: id, content: [{ type: 'text', text: '18C' }] },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
    expect(c.messages).toEqual([
      { role: 'user', content: 'w?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id, type: 'function', function: { name: 'w', arguments: '{"c":"P"}' } }],
      },
      { role: 'tool', tool_call_id: id, content: '18C' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it.each([
    [{ type: 'tool_use', name: 'w', input: {} }, 'messages[0].content[0].id'],
    [{ type: 'tool_use', id: '', name: 'w', input: {} }, 'messages[0].content[0].id'],
  ])('a missing or empty tool_use id is 400 (%j)', (block, param) => {
    expect(refused({ messages: [{ role: 'assistant', content: [block] }] }).param).toBe(param);
  });

  it('a missing or empty tool_result tool_use_id is 400', () => {
    expect(
      refused({ messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] }).param,
    ).toBe('messages[0].content[0].tool_use_id');
    expect(
      refused({
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: '', content: 'x' }] }],
      }).status,
    ).toBe(400);
  });

  it('image blocks: base64 and http(s) URL sources become image_url parts', () => {
    const c = parse({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'text', text: 'what?' },
          ],
        },
      ],
    });
    expect(c.messages[0]!.content).toEqual([
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'text', text: 'what?' },
    ]);
  });

  it.each([
    { type: 'image' },
    { type: 'image', source: { type: 'base64', data: 'x' } },
    { type: 'image', source: { type: 'base64', media_type: 'image/png' } },
    { type: 'image', source: { type: 'url', url: 'file:///etc/passwd' } },
    { type: 'image', source: { type: 'url' } },
  ])('a malformed image block is 400 (%j)', (block) => {
    expect(refused({ messages: [{ role: 'user', content: [block] }] })).toMatchObject({
      status: 400,
      code: 'invalid_request_error',
    });
  });
});

describe('native-field preservation (rule 8)', () => {
  const raw = {
    ...messages,
    system: [
      { type: 'text', text: 'Policy A.' },
      { type: 'text', text: 'Policy B.', cache_control: { type: 'ephemeral' } },
    ],
    thinking: { type: 'enabled', budget_tokens: 1_024 },
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'q', cache_control: { type: 'ephemeral' } }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 't', signature: 's' },
          { type: 'redacted_thinking', data: 'd' },
          { type: 'text', text: 'a' },
        ],
      },
      { role: 'user', content: 'again' },
    ],
  };
  const c = parse(raw, 'interleaved-thinking-2025-05-14');

  it('the envelope keeps the inbound JSON and alt-beta verbatim, and marks thinking', () => {
    expect(c.preserved).toEqual({ raw, beta: 'interleaved-thinking-2025-05-14', thinking: true });
  });

  it('for other targets: system flattened with hints removed, reasoning history dropped, cache hints stripped', () => {
    expect(c.raw.messages).toEqual([
      { role: 'system', content: 'Policy A.Policy B.' },
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
      { role: 'user', content: 'again' },
    ]);
    expect(JSON.stringify(c.raw)).not.toMatch(/cache_control|thinking|signature/);
  });

  it('thinking disabled does not pin', () => {
    expect(parse({ thinking: { type: 'disabled' } }).preserved?.thinking).toBe(false);
  });
});
