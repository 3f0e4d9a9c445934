import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, message, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { connect, upsertAnthropic } from '../fakes/anthropic-upstream-gateway.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// The `openai` SDK's own helpers against a Claude upstream through /v1 (SPEC 4.1 rules 5 and 7):
// streams carry only tool-call deltas the primary wire allows, and say what the buffered reply
// says. A tool without parameters streams the arguments `{}` (Claude sends one empty fragment), so
// runTools runs it; a server tool the upstream ran itself (web search) adds no tool call, so the
// stream helper does not throw "tool call snapshot missing type".

const TENANT_KEY = 'sk-ant-tenant-byok';
let fake: FakeAnthropic;
let gw: GatewayEnv;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeAnthropic({ requireKey: TENANT_KEY });
  gw = await startGatewayEnv();
  await upsertAnthropic(gw, {
    lane: 'anthropic',
    model: 'claude-sonnet',
    providerModelId: 'claude-sonnet-4-5-20250929',
    baseUrl: fake.url,
    reasoning: false,
  });
  await connect(gw, 'anthropic', TENANT_KEY);
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(
    async () => {
      fake.enqueue(message());
      const r = await client.chat.completions
        .create({ model: 'claude-sonnet', messages: [{ role: 'user', content: 'ping' }] })
        .catch(() => null);
      return r !== null;
    },
    10_000,
    'the gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const toolCall = { type: 'tool_use' as const, name: 'current_time', input: {} };

describe('tools without parameters (SPEC 4.1 rule 7)', () => {
  it('streamed and buffered state the same arguments, {}', async () => {
    fake.enqueue(message({ blocks: [toolCall] }), message({ blocks: [toolCall] }));
    const params = {
      model: 'claude-sonnet',
      messages: [{ role: 'user' as const, content: 'what time is it?' }],
      tools: [
        {
          type: 'function' as const,
          function: { name: 'current_time', parameters: { type: 'object', properties: {} } },
        },
      ],
    };
    const buffered = await client.chat.completions.create(params);
    const streamed = await client.chat.completions.stream(params).finalChatCompletion();
    expect(buffered.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: 'current_time', arguments: '{}' },
    });
    expect(streamed.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: 'current_time', arguments: '{}' },
    });
  });

  it('runTools (streamed) runs the tool and sends its result back to the model', async () => {
    fake.enqueue(
      message({ blocks: [toolCall] }),
      message({ blocks: [{ type: 'text', text: 'It is noon.' }] }),
    );
    let ran = 0;
    const runner = client.chat.completions.runTools({
      model: 'claude-sonnet',
      stream: true,
      messages: [{ role: 'user', content: 'what time is it?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'current_time',
            description: 'the current time',
            parameters: { type: 'object', properties: {} },
            function: () => {
              ran += 1;
              return '12:00';
            },
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('It is noon.');
    expect(ran).toBe(1);
    const toolMessage = runner.messages.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ role: 'tool', content: '12:00' });
    expect(JSON.stringify(runner.messages)).not.toMatch(/Unexpected end of JSON input/);
  });
});

describe('a server tool the upstream ran itself (web_search_options; SPEC 4.1 rules 7, 8)', () => {
  const blocks = [
    { type: 'text' as const, text: 'Searching.' },
    { type: 'server_tool_use' as const, name: 'web_search', input: { query: 'weather in Oslo' } },
    { type: 'web_search_tool_result' as const, tool_use_id: 'srvtoolu_x', content: [] },
    { type: 'text' as const, text: ' It is sunny.' },
    { type: 'tool_use' as const, name: 'get_weather', input: { city: 'Oslo' } },
  ];
  const params = {
    model: 'claude-sonnet',
    messages: [{ role: 'user' as const, content: 'weather in Oslo?' }],
    web_search_options: {},
    tools: [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ],
  };

  it('the stream helper does not throw, and the streamed message equals the buffered one', async () => {
    fake.enqueue(message({ blocks }), message({ blocks }));
    const buffered = await client.chat.completions.create(params);
    const streamed = await client.chat.completions.stream(params).finalChatCompletion();
    const b = buffered.choices[0]?.message;
    const s = streamed.choices[0]?.message;
    expect(s?.content).toBe(b?.content);
    const shape = (t: OpenAI.ChatCompletionMessageToolCall) =>
      t.type === 'function' ? [t.type, t.function.name, t.function.arguments] : [t.type];
    expect(s?.tool_calls?.map(shape)).toEqual(b?.tool_calls?.map(shape));
    expect(b?.tool_calls).toHaveLength(1);
    expect(s?.tool_calls?.map(shape)).toEqual([['function', 'get_weather', '{"city":"Oslo"}']]);
  });

  it('every streamed tool_calls entry opens with id, type and name at index 0 upward', async () => {
    fake.enqueue(message({ blocks }));
    const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...params, stream: true }),
    });
    const text = await res.text();
    const calls = text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .flatMap((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.tool_calls ?? []);
    const opened = new Set<number>();
    for (const c of calls) {
      if (!opened.has(c.index)) {
        expect(c).toMatchObject({
          id: expect.any(String),
          type: 'function',
          function: { name: expect.any(String) },
        });
        opened.add(c.index);
      }
    }
    expect([...opened]).toEqual([0]);
  });
});
