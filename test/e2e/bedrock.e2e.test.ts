import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requestCompletedSchema } from '../../src/events/envelopes/request-completed.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { reply } from '../fakes/bedrock-runtime.js';
import { type BedrockGateway, MODEL_A, startBedrockGateway } from '../fakes/bedrock-runtime-env.js';
import { eventually } from '../helpers/gateway-env.js';

// The managed runtime (SPEC 4.7) through `svc serve` with the real `openai` SDK and the fake managed runtime, which
// verifies every SigV4 signature independently (SPEC 4.7, 5, 7.5).

let env: BedrockGateway;
let client: OpenAI;

beforeAll(async () => {
  env = await startBedrockGateway({ SVC_GATEWAY_RETRIES: '1' });
  client = env.client;
});
afterAll(async () => {
  await env?.stop();
});
beforeEach(() => env.fake.reset());
const upstream = () => env.fake.requests;

const weatherTools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather by city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
  { type: 'function', function: { name: 'get_time' } },
];

describe('buffered chat', () => {
  it('translates, signs (service bedrock, the metadata region), and renders the reply', async () => {
    env.fake.enqueue(
      reply({ blocks: [{ text: 'Hello from the runtime.' }], usage: { inputTokens: 11, outputTokens: 5 } }),
    );
    const { data, response } = await client.chat.completions
      .create({
        model: MODEL_A.model,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello' },
        ],
        max_tokens: 64,
        temperature: 0.3,
      })
      .withResponse();
    expect(data.model).toBe(MODEL_A.model);
    expect(data.choices[0]!.message.content).toBe('Hello from the runtime.');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    expect(env.fake.violations).toEqual([]);
    const sent = upstream()[0]!;
    expect(sent.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse');
    expect(sent.body).toEqual({
      system: [{ text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ text: 'hello' }] }],
      inferenceConfig: { maxTokens: 64, temperature: 0.3 },
    });
    expect(sent.headers.authorization).toMatch(
      /Credential=AKIAFAKEFAKEFAKE0001\/\d{8}\/us-east-1\/bedrock\/aws4_request/,
    );
    expect(sent.headers['x-svc-request-id']).toBe(response.headers.get('x-svc-request-id'));
    expect(sent.signedHeaders).not.toContain('x-svc-request-id');
    expect(JSON.stringify(sent.headers)).not.toContain(env.fake.credentials.secretAccessKey);
  });

  it('tool calls and a follow-up turn with several results in one user turn', async () => {
    env.fake.enqueue(
      reply({
        blocks: [
          { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 'tu_2', name: 'get_time', input: {} } },
        ],
      }),
    );
    const first = await client.chat.completions.create({
      model: MODEL_A.model,
      messages: [{ role: 'user', content: 'weather and time in Oslo?' }],
      tools: weatherTools,
      tool_choice: 'required',
    });
    const message = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(
      message.tool_calls!.map(
        (c) => c.type === 'function' && [c.id, c.function.name, JSON.parse(c.function.arguments)],
      ),
    ).toEqual([
      ['tu_1', 'get_weather', { city: 'Oslo' }],
      ['tu_2', 'get_time', {}],
    ]);
    expect((upstream()[0]!.body as { toolConfig: unknown }).toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'get_weather',
            description: 'Weather by city',
            inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        },
        { toolSpec: { name: 'get_time', inputSchema: { json: { type: 'object', properties: {} } } } },
      ],
      toolChoice: { any: {} },
    });

    await client.chat.completions.create({
      model: MODEL_A.model,
      messages: [
        { role: 'user', content: 'weather and time in Oslo?' },
        message as OpenAI.ChatCompletionAssistantMessageParam,
        { role: 'tool', tool_call_id: 'tu_1', content: 'rain' },
        { role: 'tool', tool_call_id: 'tu_2', content: '12:00' },
      ],
      tools: weatherTools,
    });
    expect((upstream()[1]!.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 'tu_2', name: 'get_time', input: {} } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tu_1', content: [{ text: 'rain' }] } },
          { toolResult: { toolUseId: 'tu_2', content: [{ text: '12:00' }] } },
        ],
      },
    ]);
  });

  it.each([
    ['tool_choice without tools', { tool_choice: 'auto' }],
    [
      'a named function not declared',
      { tools: weatherTools, tool_choice: { type: 'function', function: { name: 'x' } } },
    ],
    ['a non-function tool', { tools: [{ type: 'web_search_preview' }] }],
    ['n, even 1', { n: 1 }],
    [
      'a stream_options member other than include_usage',
      { stream: true, stream_options: { include_obfuscation: true } },
    ],
    [
      'non-JSON tool arguments',
      {
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{' } }],
          },
          { role: 'tool', tool_call_id: 't', content: 'r' },
        ],
      },
    ],
  ])('%s: 400 invalid_request_error before any upstream call, no fallback', async (_name, extra) => {
    const r = await env.post({
      model: `${MODEL_A.model},bedrock-b/claude-b`,
      messages: [{ role: 'user', content: 'x' }],
      ...extra,
    });
    expect(r.status, r.text).toBe(400);
    expect(JSON.parse(r.text).error.type).toBe('invalid_request_error');
    expect(upstream()).toHaveLength(0);
  });
});

describe('streamed chat (ConverseStream binary event-stream)', () => {
  it('the OpenAI SDK assembles streamed tool calls into valid JSON arguments (tool index counts tools only)', async () => {
    env.fake.enqueue(
      reply({
        blocks: [
          { text: 'Let me check. ' },
          { toolUse: { toolUseId: 'tu_9', name: 'get_weather', input: { city: 'Bergen', days: [1, 2] } } },
          { toolUse: { toolUseId: 'tu_10', name: 'get_time', input: { tz: 'Europe/Oslo' } } },
        ],
        inputPieces: 5,
        splitSeed: 42,
      }),
    );
    const stream = client.chat.completions.stream({
      model: MODEL_A.model,
      messages: [{ role: 'user', content: 'weather?' }],
      tools: weatherTools,
    });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Let me check. ');
    expect(
      choice.message.tool_calls!.map(
        (c) => c.type === 'function' && [c.id, c.function.name, JSON.parse(c.function.arguments)],
      ),
    ).toEqual([
      ['tu_9', 'get_weather', { city: 'Bergen', days: [1, 2] }],
      ['tu_10', 'get_time', { tz: 'Europe/Oslo' }],
    ]);
    expect(upstream()[0]!.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream');
    expect(env.fake.violations).toEqual([]);
  });

  it('frames cut at random byte boundaries decode to the same reply as whole frames', async () => {
    const text = 'one two three four five six seven eight nine ten';
    const read = async () => {
      let out = '';
      const s = await client.chat.completions.create({
        model: MODEL_A.model,
        messages: [{ role: 'user', content: text }],
        stream: true,
      });
      for await (const c of s) out += c.choices[0]?.delta.content ?? '';
      return out;
    };
    env.fake.enqueue(reply());
    const whole = await read();
    for (const seed of [1, 7, 1234]) {
      env.fake.enqueue(reply({ splitSeed: seed }));
      expect(await read()).toBe(whole);
    }
    expect(whole).toBe(text);
  });

  it('buffered and streamed requests with the same token counts are metered identically', async () => {
    const usage = { inputTokens: 1_000, outputTokens: 200 };
    env.fake.enqueue(reply({ usage }), reply({ usage }));
    const buffered = await client.chat.completions
      .create({ model: MODEL_A.model, messages: [{ role: 'user', content: 'meter me' }] })
      .withResponse();
    const streamed = await client.chat.completions
      .create({
        model: MODEL_A.model,
        messages: [{ role: 'user', content: 'meter me' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let streamedUsage: OpenAI.CompletionUsage | undefined;
    for await (const c of streamed.data) if (c.usage) streamedUsage = c.usage;
    expect(streamedUsage).toEqual(buffered.data.usage);

    const ids = [buffered.response, streamed.response].map((r) => r.headers.get('x-svc-request-id')!);
    const bus = new PostgresBus(env.gw.db.pool, { connectionString: env.gw.db.url });
    const seen = new Map<string, unknown>();
    const consumer = await bus.consume(
      'bedrock-metering',
      'svc.requests.>',
      async (m) => {
        seen.set(m.messageId, JSON.parse(Buffer.from(m.data).toString('utf8')));
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    await eventually(async () => ids.every((id) => seen.has(id)), 15_000, 'both envelopes');
    await consumer.close();
    await bus.close();
    const [b, s] = ids.map((id) => requestCompletedSchema.parse(seen.get(id)));
    expect(s!.usage).toEqual(b!.usage);
    expect(s!.cost_lines).toEqual(b!.cost_lines);
    expect(b!.total_cost_usd).toBe('0.006'); // 1000 x 0.000003 + 200 x 0.000015
    expect(b!.usage.reasoning_tokens ?? 0).toBe(0);
    expect(b!.provider).toBe('bedrock');
  });
});
