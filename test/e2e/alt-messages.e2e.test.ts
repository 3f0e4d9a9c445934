import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type BlockSpec,
  count,
  cutStream,
  type FakeAnthropic,
  inBandError,
  message,
  startFakeAnthropic,
  status,
} from '../fakes/anthropic-upstream.js';
import { connect, envelopesOf, upsertAnthropic, upsertOpenAi } from '../fakes/anthropic-upstream-gateway.js';
import { type FakeOpenAI, reply, startFakeOpenAI, toolCalls } from '../fakes/openai-upstream.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 4.2 with the real `@anthropic-ai/sdk` against `svc serve` at <gateway>/alt
// (SPEC 4.2, 7.2, 7.4, 9.1-9.2): the messages-style provider and an OpenAI upstream behind one edge.

const TENANT_KEY = 'sk-ant-tenant-byok';
let fake: FakeAnthropic;
let openai: FakeOpenAI;
let gw: GatewayEnv;
let client: Anthropic;

/** finalMessage() as plain JSON without the SDK's parsed_output helper, and with the id set aside. */
const comparable = (m: object) => {
  const { parsed_output: _sdk, id: _id, ...rest } = JSON.parse(JSON.stringify(m)) as Record<string, unknown>;
  return rest;
};

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': gw.boot.api_key, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

const rich: BlockSpec[] = [
  {
    type: 'thinking',
    thinking: 'The user wants the weather; I should call the tool.',
    signature: 'EqQBCkgIARABGAIiQLsig',
  },
  { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT' },
  { type: 'text', text: 'Let me check the weather.' },
  {
    type: 'tool_use',
    id: 'toolu_01A09q90qw90lq917835lq9',
    name: 'get_weather',
    input: { city: 'Paris', unit: 'c' },
  },
];
const richUsage = {
  input_tokens: 120,
  output_tokens: 80,
  cache_creation_input_tokens: 30,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 0 },
  thinking_tokens: 25,
};
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather in a city.',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

beforeAll(async () => {
  fake = await startFakeAnthropic({ requireKey: TENANT_KEY });
  openai = await startFakeOpenAI();
  gw = await startGatewayEnv({
    SVC_GATEWAY_RETRIES: '1',
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    SVC_GATEWAY_ATTEMPT_TIMEOUT_MS: '3000',
  });
  await upsertAnthropic(gw, {
    lane: 'anthropic',
    model: 'claude-sonnet',
    providerModelId: 'claude-sonnet-4-5-20250929',
    baseUrl: fake.url,
    reasoning: true,
  });
  await upsertOpenAi(gw, 'gpt-4o', openai.url);
  await connect(gw, 'anthropic', TENANT_KEY);
  await connect(gw, 'openai', 'sk-openai-byok');
  client = new Anthropic({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/alt`, maxRetries: 0 });
  await eventually(
    async () =>
      (
        await post('/alt/v1/messages', {
          model: 'claude-sonnet',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'ping' }],
        })
      ).status === 200 &&
      (
        await post('/alt/v1/messages', {
          model: 'gpt-4o',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'ping' }],
        })
      ).status === 200,
    10_000,
    'gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await openai?.close();
});
beforeEach(() => {
  fake.reset();
  openai.reset();
});

describe('messages through the Anthropic SDK to the messages-style provider', () => {
  it('messages.create: a message in the Messages shape; tenant key, our version, the inbound body upstream', async () => {
    fake.enqueue(message({ usage: { input_tokens: 11, output_tokens: 2 } }));
    const { data, response } = await client.messages
      .create({
        model: 'claude-sonnet',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hello gateway' }],
      })
      .withResponse();
    expect(data).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet',
      content: [{ type: 'text', text: 'hello gateway' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 11,
        output_tokens: 2,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    expect(data.id).toMatch(/^msg_/);
    expect(response.headers.get('x-svc-request-id')).toMatch(/^req_/);
    const upstream = fake.requests.at(-1)!;
    expect(upstream.path).toBe('/v1/messages');
    expect(upstream.headers['x-api-key']).toBe(TENANT_KEY);
    expect(upstream.headers.authorization).toBeUndefined();
    expect(upstream.version).toBe('2023-06-01');
    expect(upstream.body).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hello gateway' }],
    });
  });

  it('messages.stream: finalMessage() equals the buffered reply for the same upstream', async () => {
    const spec = { blocks: rich, usage: richUsage };
    fake.enqueue(message(spec), message(spec));
    const params = {
      model: 'claude-sonnet',
      max_tokens: 1_000,
      tools: [weatherTool],
      messages: [{ role: 'user' as const, content: 'weather in Paris?' }],
    };
    const buffered = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    expect(comparable(final)).toEqual(comparable(buffered));
    expect(buffered.content.map((b) => b.type)).toEqual([
      'thinking',
      'redacted_thinking',
      'text',
      'tool_use',
    ]);
    expect(buffered.usage).toEqual({
      input_tokens: 120,
      output_tokens: 80,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 0 },
      output_tokens_details: { thinking_tokens: 25 },
    });
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: true });
  });

  it('tool use round trip: ids preserved byte for byte in both directions', async () => {
    const id = 'toolu_01D7FLrfh4GYq7yT1ULFeyMV';
    fake.enqueue(
      message({ blocks: [{ type: 'tool_use', id, name: 'get_weather', input: { city: 'Oslo' } }] }),
    );
    const first = await client.messages.create({
      model: 'claude-sonnet',
      max_tokens: 200,
      tools: [weatherTool],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ id, name: 'get_weather', input: { city: 'Oslo' } });
    fake.enqueue(message({ blocks: [{ type: 'text', text: 'It is 9C in Oslo.' }] }));
    const second = await client.messages.create({
      model: 'claude-sonnet',
      max_tokens: 200,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'weather in Oslo?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: '9C' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'It is 9C in Oslo.' }]);
    const sent = fake.requests.at(-1)!.body as {
      messages: { content: { id?: string; tool_use_id?: string }[] }[];
    };
    expect(sent.messages[1]!.content[0]!.id).toBe(id);
    expect(sent.messages[2]!.content[0]!.tool_use_id).toBe(id);
  });

  it('thinking: blocks with signatures streamed; the request replayed verbatim with max_tokens clamped and beta forwarded', async () => {
    fake.enqueue(
      message({
        blocks: [
          { type: 'thinking', thinking: 'Two plus two is four.', signature: 'sig-one' },
          { type: 'text', text: 'Four.' },
        ],
        usage: { thinking_tokens: 9 },
      }),
    );
    const request = {
      model: 'claude-sonnet',
      max_tokens: 20_000,
      thinking: { type: 'enabled' as const, budget_tokens: 2_048 },
      system: [
        { type: 'text' as const, text: 'You are exact.', cache_control: { type: 'ephemeral' as const } },
      ],
      messages: [{ role: 'user' as const, content: 'What is 2+2?' }],
    };
    const stream = client.messages.stream(request, {
      headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'anthropic-version': '2099-01-01' },
    });
    const kinds: string[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta') kinds.push(e.delta.type);
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      { type: 'thinking', thinking: 'Two plus two is four.', signature: 'sig-one' },
      { type: 'text', text: 'Four.' },
    ]);
    expect(kinds.filter((k) => k === 'signature_delta')).toHaveLength(1);
    expect(kinds).toContain('thinking_delta');
    const upstream = fake.requests.at(-1)!;
    expect(upstream.body).toEqual({
      ...request,
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 8_192,
      stream: true,
    });
    expect(upstream.beta).toBe('interleaved-thinking-2025-05-14');
    expect(upstream.version).toBe('2023-06-01');
  });

  it('thinking pins the route: no fallback to another provider, and 400 when no messages-style endpoint serves it', async () => {
    fake.enqueue(status(503, 'down'), status(503, 'still down'));
    const err = (await client.messages
      .create({
        model: 'claude-sonnet,gpt-4o',
        max_tokens: 100,
        thinking: { type: 'enabled', budget_tokens: 1_024 },
        messages: [{ role: 'user', content: 'x' }],
      })
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(openai.requests).toHaveLength(0);
    const none = await post('/alt/v1/messages', {
      model: 'gpt-4o',
      max_tokens: 100,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(none.status).toBe(400);
    expect(JSON.parse(none.text)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('messages-style') },
    });
    expect(openai.requests).toHaveLength(0);
  });

  it('countTokens: proxied with the tenant key on a messages-style route, ceil(bytes/4) otherwise', async () => {
    fake.enqueue(count(321));
    const counted = await client.messages.countTokens({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(counted).toEqual({ input_tokens: 321 });
    const upstream = fake.requests.at(-1)!;
    expect(upstream.path).toBe('/v1/messages/count_tokens');
    expect(upstream.headers['x-api-key']).toBe(TENANT_KEY);
    expect(upstream.body).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      messages: [{ role: 'user', content: 'count me' }],
    });

    const estimated = await client.messages.countTokens({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'count me' }],
    });
    const internal = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'count me' }] });
    expect(estimated).toEqual({ input_tokens: Math.ceil(Buffer.byteLength(internal) / 4) });
    expect(openai.requests).toHaveLength(0);
  });
});

describe('an OpenAI upstream rendered as Messages', () => {
  it('buffered and streamed agree; tool calls become tool_use with their ids', async () => {
    const params = {
      model: 'gpt-4o',
      max_tokens: 50,
      messages: [{ role: 'user' as const, content: 'one two three' }],
    };
    const buffered = await client.messages.create(params);
    expect(buffered).toMatchObject({
      model: 'gpt-4o',
      content: [{ type: 'text', text: 'one two three' }],
      stop_reason: 'end_turn',
    });
    const final = await client.messages.stream(params).finalMessage();
    expect(comparable(final)).toEqual(comparable(buffered));
    expect(openai.requests[0]!.body).toMatchObject({ model: 'gpt-4o-2024-08-06', max_tokens: 50 });

    openai.enqueue(toolCalls([{ id: 'call_Xy9', name: 'get_weather', arguments: { city: 'Rome' } }]));
    const tool = await client.messages.create({ ...params, tools: [weatherTool] });
    expect(tool.stop_reason).toBe('tool_use');
    expect(tool.content).toContainEqual({
      type: 'tool_use',
      id: 'call_Xy9',
      name: 'get_weather',
      input: { city: 'Rome' },
    });
  });
});

describe('long frames (SPEC 4.2 rule 5)', () => {
  it('a delta over 64 KiB reaches the SDK whole, then message_delta and message_stop', async () => {
    const big = 'w'.repeat(100_000);
    openai.enqueue(reply({ text: `${big} end`, chunks: 2 }));
    const events: string[] = [];
    const stream = client.messages.stream({
      model: 'gpt-4o',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'a long one' }],
    });
    stream.on('streamEvent', (e) => events.push(e.type));
    const final = await stream.finalMessage();
    // Compared as a flag: a failure must not print 100 kB.
    expect(final.content).toHaveLength(1);
    expect(final.content[0]?.type === 'text' && final.content[0].text === `${big} end`).toBe(true);
    expect(final.stop_reason).toBe('end_turn');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
  });
});

describe('errors and routes (SPEC 4.2, 7.2, 7.4)', () => {
  it('max_tokens missing: 400 invalid_request_error in the alternate envelope, no request id', async () => {
    const r = await post('/alt/v1/messages', {
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
    expect(r.headers.get('x-svc-request-id')).toBeNull();
    expect(fake.requests).toHaveLength(0);
    const empty = await fetch(`${gw.serve.httpUrl}/alt/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': gw.boot.api_key, 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('one failed attempt: the provider message; several: error.svc.attempts; the request id in the header only', async () => {
    fake.enqueue(status(400, 'messages.0.content: bad block'));
    const one = await post('/alt/v1/messages', {
      model: 'claude-sonnet',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(one.status).toBe(400);
    expect(JSON.parse(one.text)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'messages.0.content: bad block' },
    });
    expect(one.headers.get('x-svc-request-id')).toMatch(/^req_/);

    fake.enqueue(status(529, 'Overloaded'), status(529, 'Overloaded again'));
    const several = await post('/alt/v1/messages', {
      model: 'claude-sonnet',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    const body = JSON.parse(several.text) as {
      error: Record<string, unknown> & { svc: { attempts: { kind: string; status_code: number }[] } };
    };
    expect(body.error.type).toBe('overloaded_error');
    expect(several.status).toBe(529);
    expect(body.error.attempts).toBeUndefined();
    expect(body.error.request_id).toBeUndefined();
    expect(body.error.svc.attempts.map((a) => [a.kind, a.status_code])).toEqual([
      ['UpstreamStatus', 529],
      ['UpstreamStatus', 529],
    ]);
    expect(several.headers.get('x-svc-request-id')).toMatch(/^req_/);
  });

  it('unknown /alt routes are 404 in the alternate envelope; bare /v1/messages is 404 in the primary one', async () => {
    const alt = await post('/alt/v1/complete', {});
    expect(alt.status).toBe(404);
    expect(JSON.parse(alt.text)).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const bare = await fetch(`${gw.serve.httpUrl}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(bare.status).toBe(404);
    expect(((await bare.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
  });

  it('a stream cut mid-way and an in-band upstream error each end with one api_error event', async () => {
    const body = {
      model: 'claude-sonnet',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user' as const, content: 'a b c d e f' }],
    };
    for (const fault of [cutStream(5), inBandError(5)]) {
      fake.enqueue(fault);
      const r = await post('/alt/v1/messages', body);
      expect(r.status).toBe(200);
      const frames = r.text.split('\n\n').filter(Boolean);
      expect(frames[0]!.startsWith('event: message_start\n')).toBe(true);
      expect(frames.at(-1)).toMatch(
        /^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":/,
      );
      expect(r.text).not.toContain('message_stop');
      expect(r.text).not.toContain('[DONE]');
    }
    fake.enqueue(inBandError(5));
    const { stream: _flag, ...params } = body;
    await expect(client.messages.stream(params).finalMessage()).rejects.toThrow(/Overloaded/);
  });
});

describe('analytics (SPEC 4.2 rule 10)', () => {
  it('the same envelope as chat completions, distinguished by route; count_tokens has no cost', async () => {
    fake.enqueue(message({ usage: { input_tokens: 1000, output_tokens: 200 } }), count(5));
    const { response } = await client.messages
      .create(
        {
          model: 'claude-sonnet',
          max_tokens: 300,
          messages: [{ role: 'user', content: 'price me' }],
          metadata: { user_id: 'eu-9' },
        },
        { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' } },
      )
      .withResponse();
    const counted = await client.messages
      .countTokens({ model: 'claude-sonnet', messages: [{ role: 'user', content: 'x' }] })
      .withResponse();
    const messagesId = response.headers.get('x-svc-request-id')!;
    const countId = counted.response.headers.get('x-svc-request-id')!;
    const envelopes = await envelopesOf(gw, [messagesId, countId]);
    expect(envelopes.get(messagesId)).toMatchObject({
      route: '/alt/v1/messages',
      provider: 'anthropic',
      model_served: 'claude-sonnet',
      provider_model_id: 'claude-sonnet-4-5-20250929',
      end_user_id: 'eu-9',
      // SPEC 4.2 rule 8: the alt-beta header is forwarded and recorded.
      alt_beta: 'prompt-caching-2024-07-31',
      funding: 'byok',
      total_cost_usd: '0.006',
      billing: { status: 'priced' },
    });
    expect(envelopes.get(countId)).toMatchObject({
      route: '/alt/v1/messages/count_tokens',
      status: 'success',
      cost_lines: [],
      total_cost_usd: '0',
    });
  });
});
