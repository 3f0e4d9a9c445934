import { describe, expect, it } from 'vitest';
import type { CanonicalRequest, ChatMessage } from '../contract.js';
import { translateChat } from './translate.js';

const request = (raw: Record<string, unknown>, extra: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  operation: 'chat',
  route: '/v1/chat/completions',
  model: 'm',
  messages: (raw.messages ?? [{ role: 'user', content: 'hi' }]) as ChatMessage[],
  stream: raw.stream === true,
  includeUsage: false,
  ...(typeof raw.max_tokens === 'number' ? { maxTokens: raw.max_tokens } : {}),
  ...(typeof raw.temperature === 'number' ? { temperature: raw.temperature } : {}),
  ...(typeof raw.top_p === 'number' ? { topP: raw.top_p } : {}),
  raw,
  ...extra,
});

const ok = (raw: Record<string, unknown>) => {
  const t = translateChat(request(raw));
  if (!t.ok) throw new Error(`refused: ${t.message}`);
  return t.request;
};

const refused = (raw: Record<string, unknown>) => {
  const t = translateChat(request(raw));
  if (t.ok) throw new Error('translated, expected a refusal');
  return t;
};

const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };
const time = { type: 'function', function: { name: 'get_time', description: 'Now' } };

describe('rule 1: system, messages, inferenceConfig', () => {
  it('system (and developer) become system text blocks; user and assistant text blocks; sampling to inferenceConfig', () => {
    expect(
      ok({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: [{ type: 'text', text: 'No emoji.' }] },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
            name: 'bob',
          },
          { role: 'assistant', content: 'c' },
          { role: 'user', content: 'd' },
        ],
        max_tokens: 50,
        temperature: 0.2,
        top_p: 0.9,
      }),
    ).toEqual({
      system: [{ text: 'Be brief.' }, { text: 'No emoji.' }],
      messages: [
        { role: 'user', content: [{ text: 'a' }, { text: 'b' }] },
        { role: 'assistant', content: [{ text: 'c' }] },
        { role: 'user', content: [{ text: 'd' }] },
      ],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, topP: 0.9 },
    });
  });

  it('no sampling fields, no system: neither key is sent', () => {
    expect(ok({ messages: [{ role: 'user', content: 'x' }] })).toEqual({
      messages: [{ role: 'user', content: [{ text: 'x' }] }],
    });
  });

  it.each([
    [{ role: 'user', content: '' }, 'messages[0].content'],
    [{ role: 'user', content: null }, 'messages[0].content'],
    [{ role: 'system', content: [] }, 'messages[0].content'],
    [
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x' } }] },
      'messages[0].content[0]',
    ],
    [{ role: 'assistant', content: null }, 'messages[0].content'],
    [{ role: 'function', content: 'x' }, 'messages[0].role'],
  ])('a message without text content, or a role not accepted, is a client error: %j', (message, param) => {
    expect(refused({ messages: [message] }).param).toBe(param);
  });
});

describe('rule 2: tools and the tool_choice table', () => {
  const tools = [weather, time];
  it('tools become toolSpecs (description when present; an empty object schema when no parameters)', () => {
    expect(ok({ tools }).toolConfig).toEqual({
      tools: [
        { toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object' } } } },
        {
          toolSpec: {
            name: 'get_time',
            description: 'Now',
            inputSchema: { json: { type: 'object', properties: {} } },
          },
        },
      ],
    });
  });

  it.each([
    ['absent', undefined, 'no toolChoice'],
    ['auto', 'auto', { auto: {} }],
    ['required', 'required', { any: {} }],
    ['named function', { type: 'function', function: { name: 'get_time' } }, { tool: { name: 'get_time' } }],
  ])('tool_choice %s', (_name, tool_choice, expected) => {
    const config = ok({ tools, ...(tool_choice === undefined ? {} : { tool_choice }) }).toolConfig!;
    if (expected === 'no toolChoice') expect(config).not.toHaveProperty('toolChoice');
    else expect(config.toolChoice).toEqual(expected);
  });

  it('tool_choice none sends no toolConfig at all', () => {
    expect(ok({ tools, tool_choice: 'none' })).not.toHaveProperty('toolConfig');
  });
});

describe('rule 3: the three refusals', () => {
  it('a tool_choice with no tools', () => {
    const r = refused({ tool_choice: 'auto' });
    expect(r).toMatchObject({ param: 'tool_choice' });
    expect(r.message).toMatch(/no tools/);
    expect(refused({ tools: [], tool_choice: 'required' }).param).toBe('tool_choice');
  });

  it('a named function not declared', () => {
    const r = refused({ tools: [weather], tool_choice: { type: 'function', function: { name: 'launch' } } });
    expect(r.param).toBe('tool_choice.function.name');
    expect(r.message).toContain('launch');
  });

  it('a non-function tool', () => {
    const r = refused({ tools: [weather, { type: 'web_search' }] });
    expect(r.param).toBe('tools[1].type');
    expect(r.message).toContain('web_search');
  });
});

describe('rule 4: follow-up turns', () => {
  const call = (id: string, name: string, args: string) => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  });

  it('assistant tool_calls become toolUse blocks; several results share one user turn, matched by id', () => {
    const body = ok({
      tools: [weather, time],
      messages: [
        { role: 'user', content: 'weather and time?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [call('t1', 'get_weather', '{"city":"Oslo"}'), call('t2', 'get_time', '{}')],
        },
        { role: 'tool', tool_call_id: 't1', content: 'rain' },
        { role: 'tool', tool_call_id: 't2', content: [{ type: 'text', text: '12:00' }] },
        { role: 'user', content: 'thanks' },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ text: 'weather and time?' }] },
      {
        role: 'assistant',
        content: [
          { toolUse: { toolUseId: 't1', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 't2', name: 'get_time', input: {} } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 't1', content: [{ text: 'rain' }] } },
          { toolResult: { toolUseId: 't2', content: [{ text: '12:00' }] } },
          { text: 'thanks' },
        ],
      },
    ]);
  });

  it('assistant text before its tool calls is kept as a text block first', () => {
    const body = ok({
      tools: [weather],
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'Let me look.', tool_calls: [call('t1', 'get_weather', '{}')] },
        { role: 'tool', tool_call_id: 't1', content: 'sun' },
      ],
    });
    expect(body.messages[1]!.content[0]).toEqual({ text: 'Let me look.' });
  });

  it.each([
    [
      'a tool call without id',
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
      ],
      'messages[1].tool_calls[0].id',
    ],
    [
      'non-JSON arguments',
      [{ role: 'assistant', content: null, tool_calls: [call('t1', 'f', '{city: Oslo}')] }],
      'messages[1].tool_calls[0].function.arguments',
    ],
    [
      'a tool message without tool_call_id',
      [
        { role: 'assistant', content: null, tool_calls: [call('t1', 'f', '{}')] },
        { role: 'tool', content: 'x' },
      ],
      'messages[2].tool_call_id',
    ],
    [
      'a tool message answering no pending call',
      [
        { role: 'assistant', content: null, tool_calls: [call('t1', 'f', '{}')] },
        { role: 'tool', tool_call_id: 't9', content: 'x' },
      ],
      'messages[2].tool_call_id',
    ],
  ])('%s is a client error', (_name, follow, param) => {
    expect(refused({ messages: [{ role: 'user', content: 'q' }, ...follow] }).param).toBe(param);
  });
});

describe('parameters the runtime cannot honour', () => {
  it.each([1, 2, 0, '1', 2.0])('n is refused at any non-null value (%j)', (n) => {
    expect(refused({ n })).toMatchObject({ param: 'n' });
  });

  it('n null is accepted', () => {
    expect(translateChat(request({ n: null })).ok).toBe(true);
  });

  it('stream_options: include_usage is honoured, any other member refused by name', () => {
    expect(translateChat(request({ stream: true, stream_options: { include_usage: true } })).ok).toBe(true);
    const r = refused({
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(r.param).toBe('stream_options.continuous_usage_stats');
    expect(r.message).toContain('continuous_usage_stats');
  });
});
