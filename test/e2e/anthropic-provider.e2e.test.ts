import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cutStream,
  type FakeAnthropic,
  inBandError,
  type MessageSpec,
  message,
  startFakeAnthropic,
} from '../fakes/anthropic-upstream.js';
import {
  connect,
  costOf,
  envelopesOf,
  upsertAnthropic,
  upsertOpenAi,
} from '../fakes/anthropic-upstream-gateway.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Through the real `openai` SDK to the messages-style provider (SPEC 4.1 rules
// 5-8), stream failures priced from what was observed, and cost parity of buffered and streamed.

const TENANT_KEY = 'sk-ant-tenant-byok';
let fake: FakeAnthropic;
let openaiFake: FakeOpenAI;
let gw: GatewayEnv;
let client: OpenAI;

const chat = async (body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
  },
];

beforeAll(async () => {
  fake = await startFakeAnthropic({ requireKey: TENANT_KEY });
  openaiFake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '1', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' });
  await upsertAnthropic(gw, {
    lane: 'anthropic',
    model: 'claude-sonnet',
    providerModelId: 'claude-sonnet-4-5-20250929',
    baseUrl: fake.url,
    reasoning: true,
  });
  await upsertOpenAi(gw, 'gpt-4o', openaiFake.url);
  await connect(gw, 'anthropic', TENANT_KEY);
  await connect(gw, 'openai', 'sk-openai-byok');
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(
    async () =>
      (await chat({ model: 'claude-sonnet', messages: [{ role: 'user', content: 'ping' }] })).status ===
        200 &&
      (await chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'ping' }] })).status === 200,
    10_000,
    'gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await openaiFake?.close();
});
beforeEach(() => {
  fake.reset();
  openaiFake.reset();
});

describe('the OpenAI SDK to the messages-style provider', () => {
  it('buffered: reasoning_content, reasoning_signature and cached_tokens; the translated body upstream', async () => {
    fake.enqueue(
      message({
        blocks: [
          { type: 'thinking', thinking: 'Plan the answer.', signature: 'sig-only' },
          { type: 'redacted_thinking', data: 'opaque-bytes' },
          { type: 'text', text: 'Hello.' },
        ],
        usage: { input_tokens: 50, cache_read_input_tokens: 40, output_tokens: 10, thinking_tokens: 4 },
      }),
    );
    const r = await client.chat.completions.create(
      {
        model: 'claude-sonnet',
        max_tokens: 300,
        messages: [
          { role: 'system', content: 'Be polite.' },
          { role: 'developer', content: 'Be brief.' },
          { role: 'user', content: 'hi', name: 'alice' },
        ],
      },
      { headers: { 'anthropic-beta': 'must-not-forward' } },
    );
    const m = r.choices[0]!.message as OpenAI.ChatCompletionMessage & Record<string, unknown>;
    expect(m.content).toBe('Hello.');
    expect(m.reasoning_content).toBe('Plan the answer.');
    expect(m.reasoning_signature).toBe('sig-only');
    expect(r.usage).toEqual({
      prompt_tokens: 90,
      completion_tokens: 10,
      total_tokens: 100,
      prompt_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 4 },
    });
    expect(JSON.stringify(r)).not.toContain('opaque-bytes');
    const upstream = fake.requests.at(-1)!;
    expect(upstream.headers['x-api-key']).toBe(TENANT_KEY);
    expect(upstream.version).toBe('2023-06-01');
    expect(upstream.beta).toBeUndefined();
    expect(upstream.body).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 300,
      system: 'Be polite.\nBe brief.',
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it('streaming: tool calls assemble into valid JSON arguments and reasoning_content arrives', async () => {
    fake.enqueue(
      message({
        blocks: [
          { type: 'thinking', thinking: 'I need both tools.', signature: 'sig-a' },
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_w', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_t', name: 'get_time', input: { tz: 'Europe/Paris' } },
        ],
        deltaChunks: 4,
      }),
    );
    const stream = client.chat.completions.stream({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'weather and time in Paris?' }],
      tools,
      parallel_tool_calls: false,
    });
    let reasoning = '';
    let signatures = 0;
    stream.on('chunk', (chunk) => {
      const delta = chunk.choices[0]?.delta as
        | (Record<string, unknown> & { reasoning_content?: string })
        | undefined;
      reasoning += delta?.reasoning_content ?? '';
      if (delta?.reasoning_signature) signatures += 1;
    });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(
      calls.map((c) => c.type === 'function' && [c.id, c.function.name, JSON.parse(c.function.arguments)]),
    ).toEqual([
      ['toolu_w', 'get_weather', { city: 'Paris' }],
      ['toolu_t', 'get_time', { tz: 'Europe/Paris' }],
    ]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(final.choices[0]!.message.content).toBe('Checking both.');
    expect(reasoning).toBe('I need both tools.');
    expect(signatures).toBe(1);
    expect(fake.requests.at(-1)!.body).toMatchObject({
      stream: true,
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
  });

  it('streamed usage on request: a synthesized terminal chunk with reasoning_tokens', async () => {
    fake.enqueue(message({ usage: { input_tokens: 7, output_tokens: 3, thinking_tokens: 1 } }));
    const stream = await client.chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'a b c' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let last: OpenAI.ChatCompletionChunk | undefined;
    for await (const chunk of stream) last = chunk;
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({
      prompt_tokens: 7,
      completion_tokens: 3,
      completion_tokens_details: { reasoning_tokens: 1 },
    });
  });

  it('n other than 1 is refused once for the route, naming the other candidates; no upstream call', async () => {
    for (const n of [2, 0]) {
      const err = (await client.chat.completions
        .create({ model: 'claude-sonnet,gpt-4o', n, messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.param).toBe('n');
      expect(err.message).toContain('openai/gpt-4o');
    }
    expect(fake.requests).toHaveLength(0);
    expect(openaiFake.requests).toHaveLength(0);
    expect(
      (await chat({ model: 'claude-sonnet', n: 1, messages: [{ role: 'user', content: 'x' }] })).status,
    ).toBe(200);
  });

  it('paid hosted tools with a reference candidate on the route: 400 bad_request naming the others', async () => {
    const r = await chat({
      model: 'gpt-4o,claude-sonnet',
      web_search_options: {},
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({
      error: { code: 'bad_request', message: expect.stringContaining('anthropic/claude-sonnet') },
    });
    expect(fake.requests).toHaveLength(0);
    expect(openaiFake.requests).toHaveLength(0);
  });
});

describe('stream failures: documented terminal frames, usage priced from what was observed', () => {
  const frames = (text: string) => text.split('\n\n').filter(Boolean);
  const script: MessageSpec = {
    blocks: [{ type: 'text', text: 'alpha beta gamma delta epsilon zeta' }],
    usage: { input_tokens: 1000, output_tokens: 600 },
    deltaChunks: 6,
  };

  it('primary: cut mid-stream and an in-band error end with the error event then [DONE]; priced from message_start', async () => {
    fake.enqueue(cutStream(5, script), inBandError(5, undefined, script));
    const ids: string[] = [];
    for (const message of ['upstream stream read failed', 'Overloaded']) {
      const r = await chat({
        model: 'claude-sonnet',
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      });
      ids.push(r.headers.get('x-svc-request-id')!);
      const f = frames(r.text);
      expect(f.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(f.at(-2)!.slice(6))).toMatchObject({
        error: {
          type: 'upstream_stream_error',
          code: 'upstream_stream_error',
          message: expect.stringContaining(message),
        },
      });
      expect(r.text).toContain('"content":"alpha');
    }
    const envelopes = await envelopesOf(gw, ids);
    for (const id of ids) {
      const e = envelopes.get(id)!;
      expect(e.status).toBe('error');
      // message_start said 1000 input tokens; the output is what was relayed before the failure.
      expect(e.usage.prompt_tokens).toBe(1000);
      expect(e.usage.completion_tokens).toBeGreaterThan(0);
      expect(e.usage.completion_tokens).toBeLessThan(600);
      expect(e.cost_lines.map((l) => [l.meter, l.quantity])).toEqual([
        ['input_token', 1000],
        ['output_token', e.usage.completion_tokens],
      ]);
    }
  });

  it('an error event before any content is an ordinary attempt failure: retried, nothing reached the client', async () => {
    fake.enqueue(inBandError(0), message({ blocks: [{ type: 'text', text: 'recovered' }], deltaChunks: 1 }));
    const r = await chat({
      model: 'claude-sonnet',
      stream: true,
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(r.text).toContain('"content":"recovered"');
    expect(r.text).not.toContain('upstream_stream_error');
    expect(fake.requests).toHaveLength(2);
  });

  it('alternate: the same failure through the messages edge is one api_error event', async () => {
    fake.enqueue(cutStream(5, script));
    const alt = new Anthropic({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/alt`, maxRetries: 0 });
    await expect(
      alt.messages
        .stream({ model: 'claude-sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'go' }] })
        .finalMessage(),
    ).rejects.toThrow(/upstream stream read failed/);
  });
});

describe('usage parity (SPEC 4.7 rule 7, 4.2 rule 4)', () => {
  it('buffered and streamed requests with the same token counts produce identical cost lines, on both edges', async () => {
    const spec: MessageSpec = {
      blocks: [
        { type: 'thinking', thinking: 'x', signature: 's' },
        { type: 'text', text: 'priced reply' },
      ],
      usage: { input_tokens: 1200, output_tokens: 345, thinking_tokens: 100 },
    };
    fake.enqueue(message(spec), message(spec), message(spec), message(spec));
    const messages = [{ role: 'user' as const, content: 'price me' }];
    const buffered = await client.chat.completions
      .create({ model: 'claude-sonnet', messages })
      .withResponse();
    const streamed = await client.chat.completions
      .create({ model: 'claude-sonnet', messages, stream: true })
      .withResponse();
    for await (const _ of streamed.data) {
      /* drain */
    }
    const alt = new Anthropic({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/alt`, maxRetries: 0 });
    const altBuffered = await alt.messages
      .create({ model: 'claude-sonnet', max_tokens: 500, messages })
      .withResponse();
    const altStreamed = await alt.messages
      .create({ model: 'claude-sonnet', max_tokens: 500, messages, stream: true })
      .withResponse();
    for await (const _ of altStreamed.data) {
      /* drain */
    }
    const ids = [buffered, streamed, altBuffered, altStreamed].map(
      (r) => r.response.headers.get('x-svc-request-id')!,
    );
    const envelopes = await envelopesOf(gw, ids);
    const [b, s, ab, as] = ids.map((id) => envelopes.get(id)!);
    // 1200 x 0.000003 + 345 x 0.000015 = 0.0036 + 0.005175
    expect(costOf(b!)).toEqual({
      total: '0.008775',
      lines: [
        ['input_token', 'text', 1200, '0.000003', '0.0036'],
        ['output_token', 'text', 345, '0.000015', '0.005175'],
      ],
    });
    for (const e of [s, ab, as]) expect(costOf(e!)).toEqual(costOf(b!));
    expect([b, s, ab, as].map((e) => [e!.route, e!.stream, e!.usage.reasoning_tokens])).toEqual([
      ['/v1/chat/completions', false, 100],
      ['/v1/chat/completions', true, 100],
      ['/alt/v1/messages', false, 100],
      ['/alt/v1/messages', true, 100],
    ]);
  });
});
