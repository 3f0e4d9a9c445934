import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cutStream,
  type FakeOpenAI,
  inBandError,
  oversized,
  rateLimited,
  reply,
  stall,
  startFakeOpenAI,
  status,
  toolCalls,
} from '../fakes/openai-upstream.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 4.1 with the real `openai` SDK against `svc serve` and the fake upstream
// (SPEC 4.1 rules 1-5, 7.1, 7.3, 7.4).

let fake: FakeOpenAI;
let gw: GatewayEnv;
let client: OpenAI;
const MAX_MESSAGE = 2_048;

const chatStatus = async (body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({
    SVC_GATEWAY_RETRIES: '2',
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    SVC_GATEWAY_ATTEMPT_TIMEOUT_MS: '1500',
    SVC_GATEWAY_MAX_RESPONSE_BYTES: String(MAX_MESSAGE),
    SVC_GATEWAY_MAX_REQUEST_BYTES: '200000',
  });
  const upsert = (lane: string, model: string, providerModelId: string, input: string, output: string) =>
    gw.svc([
      'registry',
      'upsert',
      '--lane',
      lane,
      '--adapter',
      'openai',
      '--model',
      model,
      '--provider-model-id',
      providerModelId,
      '--base-url',
      fake.url,
      '--capabilities',
      'chat,streaming,tools',
      '--input-price-per-token',
      input,
      '--output-price-per-token',
      output,
    ]);
  await upsert('openai', 'gpt-4o', 'gpt-4o-2024-08-06', '0.0000025', '0.00001');
  await upsert('openai-eu', 'gpt-4o-mini', 'gpt-4o-mini-2024-07-18', '0.00000015', '0.0000006');
  await gw.svc([
    'registry',
    'upsert',
    '--lane',
    'openai',
    '--adapter',
    'openai',
    '--model',
    'gpt-retired-soon',
    '--provider-model-id',
    'x',
    '--base-url',
    fake.url,
    '--disabled',
    '--input-price-per-token',
    '0.000001',
    '--output-price-per-token',
    '0.000001',
  ]);
  await connect(gw, { provider: 'openai', secret: 'sk-byok-upstream-key' });
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  // The gateway's snapshots follow the registry and connections within a second.
  await eventually(
    async () =>
      (await chatStatus({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] })).status ===
      200,
    5_000,
    'gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('chat completions through the OpenAI SDK', () => {
  it('buffered: the reply in the primary shape, canonical model, request id header, BYOK key and upstream model id upstream', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello gateway' }] })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.model).toBe('gpt-4o');
    expect(data.choices[0]!.message.content).toBe('hello gateway');
    expect(data.usage?.total_tokens).toBeGreaterThan(0);
    const requestId = response.headers.get('x-svc-request-id');
    expect(requestId).toMatch(/^req_/);
    const upstream = fake.requests.at(-1)!;
    expect(upstream.body).toMatchObject({
      model: 'gpt-4o-2024-08-06',
      messages: [{ role: 'user', content: 'hello gateway' }],
    });
    expect(upstream.headers.authorization).toBe('Bearer sk-byok-upstream-key');
    expect(upstream.headers['x-svc-request-id']).toBe(requestId);
  });

  it('streamed: chunks relay with a stable id, created and model; usage only when asked; include_usage always upstream', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
    });
    const ids = new Set<string>();
    const created = new Set<number>();
    let text = '';
    let usageSeen = false;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      created.add(chunk.created);
      expect(chunk.model).toBe('gpt-4o');
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usageSeen = true;
    }
    expect(text).toBe('one two three four');
    expect(ids.size).toBe(1);
    expect(created.size).toBe(1);
    expect(usageSeen).toBe(false);
    expect(fake.requests.at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });

    const withUsage = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'count me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of withUsage) if (chunk.usage) usage = chunk.usage;
    expect(usage?.completion_tokens).toBe(2);
  });

  it('the SSE framing is byte-compatible: content type, data frames, [DONE] last', async () => {
    const r = await chatStatus({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'a b' }],
      stream: true,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(r.headers.get('x-svc-request-id')).toMatch(/^req_/);
    const frames = r.text.split('\n\n').filter(Boolean);
    for (const f of frames) expect(f.startsWith('data: ')).toBe(true);
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(r.text.endsWith('data: [DONE]\n\n')).toBe(true);
    const first = JSON.parse(frames[0]!.slice(6)) as {
      object: string;
      choices: { delta: { role?: string } }[];
    };
    expect(first.object).toBe('chat.completion.chunk');
    expect(first.choices[0]!.delta.role).toBe('assistant');
  });

  it('a frame over 64 KiB relays whole, followed by the usage chunk and [DONE] (SPEC 4.1 rule 5)', async () => {
    // One content delta of 100 kB: its frame alone exceeds a socket's 64 KiB high-water mark.
    const big = `${'w'.repeat(100_000)}`;
    fake.enqueue(reply({ text: `${big} end`, chunks: 2 }));
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'a long one' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    // Compared as a flag: a failure must not print 100 kB.
    expect(text.length).toBe(big.length + 4);
    expect(text === `${big} end`).toBe(true);
    expect(usage?.completion_tokens).toBe(2);
    const raw = await chatStatus({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'again' }],
      stream: true,
    });
    expect(raw.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('tool calls, buffered and streamed, assemble into valid JSON arguments', async () => {
    fake.enqueue(toolCalls([{ name: 'get_weather', arguments: { city: 'Paris', unit: 'c' } }]));
    const buffered = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: {} } },
        },
      ],
    });
    expect(buffered.choices[0]!.finish_reason).toBe('tool_calls');
    const call = buffered.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({
      city: 'Paris',
      unit: 'c',
    });

    fake.enqueue(
      toolCalls(
        [
          { name: 'get_weather', arguments: { city: 'Oslo' } },
          { name: 'get_time', arguments: { tz: 'UTC' } },
        ],
        { argumentChunks: 5 },
      ),
    );
    const stream = client.chat.completions.stream({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'weather and time?' }],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: {} } },
        },
        { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
      ],
    });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(calls.map((c) => c.type === 'function' && c.function.name)).toEqual(['get_weather', 'get_time']);
    expect(calls.map((c) => c.type === 'function' && JSON.parse(c.function.arguments))).toEqual([
      { city: 'Oslo' },
      { tz: 'UTC' },
    ]);
  });
});

describe('retries and fallback', () => {
  it('retries within the shared budget: two 500s then a reply', async () => {
    fake.enqueue(status(500), status(502));
    const r = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'persist' }],
    });
    expect(r.choices[0]!.message.content).toBe('persist');
    expect(fake.requests).toHaveLength(3);
  });

  it('falls back across a comma list once the first candidate is exhausted', async () => {
    fake.enqueue(status(503), status(503), status(503));
    const r = await client.chat.completions.create({
      model: 'gpt-4o,openai-eu/gpt-4o-mini',
      messages: [{ role: 'user', content: 'fall' }],
    });
    expect(r.model).toBe('gpt-4o-mini');
    expect(fake.requests.map((q) => (q.body as { model: string }).model)).toEqual([
      'gpt-4o-2024-08-06',
      'gpt-4o-2024-08-06',
      'gpt-4o-2024-08-06',
      'gpt-4o-mini-2024-07-18',
    ]);
  });

  it('a timeout is retried; the stalled attempt is recorded as Timeout when all fail', async () => {
    fake.enqueue(stall(2_500), stall(2_500), stall(2_500));
    const err = (await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'slow' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(504);
    const attempts = (err.error as { attempts: { kind: string }[] }).attempts;
    expect(attempts.map((a) => a.kind)).toEqual(['Timeout', 'Timeout', 'Timeout']);
  });
});

describe('error envelope (SPEC 7.1, 7.3, 7.4)', () => {
  it('one attempt: rendered directly with the provider message, status and request id; no attempts array', async () => {
    fake.enqueue(status(400, 'Invalid value for temperature: must be <= 2'));
    const err = (await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], temperature: 3 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.message).toContain('Invalid value for temperature: must be <= 2');
    const body = err.error as { type: string; code: string; request_id: string; attempts?: unknown };
    expect(body.type).toBe('invalid_request_error');
    expect(body.request_id).toBe(err.headers?.get('x-svc-request-id'));
    expect(body.attempts).toBeUndefined();
    expect(fake.requests).toHaveLength(1);
  });

  it('several failed attempts carry error.attempts with source, kind, status and message', async () => {
    fake.enqueue(
      status(503, 'overloaded one'),
      status(503, 'overloaded two'),
      status(503, 'overloaded three'),
    );
    const err = (await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(502);
    const body = err.error as {
      code: string;
      attempts: { source: string; kind: string; status_code: number; message: string }[];
    };
    expect(body.code).toBe('upstream_error');
    expect(body.attempts).toHaveLength(3);
    expect(body.attempts[0]).toMatchObject({
      source: 'openai/gpt-4o',
      kind: 'UpstreamStatus',
      status_code: 503,
    });
    expect(body.attempts[2]!.message).toContain('overloaded three');
  });

  it('an upstream 429 surfaces as 429 rate_limit_error without the upstream rate-limit headers', async () => {
    fake.enqueue(
      rateLimited({ retryAfterSeconds: 1 }),
      rateLimited({ retryAfterSeconds: 1 }),
      rateLimited({ retryAfterSeconds: 1, message: 'slow down' }),
    );
    const r = await chatStatus({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    expect(r.status).toBe(429);
    // Its Retry-After was honoured between the gateway's own tries, and is not forwarded (SPEC 7.4).
    const [first, , third] = fake.requests.slice(-3);
    expect(third!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1_900);
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.headers.get('x-should-retry')).toBe('true');
    expect([...r.headers.keys()].some((h) => h.startsWith('x-ratelimit'))).toBe(false);
    expect((JSON.parse(r.text) as { error: { type: string } }).error.type).toBe('rate_limit_error');
  });

  it('an oversized upstream error body is cut at the cap and marked', async () => {
    fake.enqueue(oversized(10_000, { status: 400 }));
    const r = await chatStatus({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    expect(r.status).toBe(400);
    const message = (JSON.parse(r.text) as { error: { message: string } }).error.message;
    expect(message.endsWith('… (truncated by the service)')).toBe(true);
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(MAX_MESSAGE + 40);
  });

  it('unknown model: 404 unknown_model with a request id, and no upstream call', async () => {
    const r = await chatStatus({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text)).toMatchObject({ error: { code: 'unknown_model', param: 'model' } });
    expect(r.headers.get('x-svc-request-id')).toMatch(/^req_/);
    expect(fake.requests).toHaveLength(0);
  });

  it('body-shape rejects are 400 without a request id; an oversized body is 413', async () => {
    const bad = await chatStatus({ model: 'gpt-4o' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({
      error: { type: 'invalid_request_error', param: 'messages' },
    });
    expect(bad.headers.get('x-svc-request-id')).toBeNull();
    const notJson = await chatStatus('{"model": ');
    expect(notJson.status).toBe(400);
    // No body at all, with the JSON content type many client wrappers always send: the route's own
    // 400 in the primary envelope, not the HTTP framework's.
    const empty = await chatStatus('');
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.text).error).toMatchObject({ type: 'invalid_request_error' });
    const big = await chatStatus({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'x'.repeat(300_000) }],
    });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text).error.message).toContain('too large');
  });

  it('unknown routes and unimplemented families are 404 in the primary envelope; generateContent is 501', async () => {
    for (const [method, path] of [
      ['POST', '/v1/batches'],
      ['POST', '/v1/audio/speech'],
      ['POST', '/v1/messages'],
      ['GET', '/v1/nothing-here'],
      ['POST', '/v1/threads/t/runs'],
    ] as const) {
      const res = await fetch(`${gw.serve.httpUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${gw.boot.api_key}` },
      });
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { message: string } }).error.message, path).toBeTruthy();
      expect(res.headers.get('x-svc-request-id')).toBeNull();
    }
    const gen = await fetch(`${gw.serve.httpUrl}/v1beta/models/gemini-pro:generateContent`, {
      method: 'POST',
    });
    expect(gen.status).toBe(501);
  });
});

describe('streams that fail after the first byte', () => {
  const frames = (text: string) => text.split('\n\n').filter(Boolean);

  it('an upstream cut mid-stream ends with a terminal error event and [DONE]; no fallback', async () => {
    fake.enqueue(cutStream(3, { chunks: 10 }));
    const r = await chatStatus({
      model: 'gpt-4o,openai-eu/gpt-4o-mini',
      messages: [{ role: 'user', content: 'a b c d e f g h i j' }],
      stream: true,
    });
    expect(r.status).toBe(200);
    const f = frames(r.text);
    expect(f.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(f.at(-2)!.slice(6)) as { error: { type: string; code: string } };
    expect(error.error.code).toBe('upstream_stream_error');
    expect(fake.requests).toHaveLength(1);
  });

  it('an in-band error chunk on a 200 stream ends the same way, and the SDK raises it', async () => {
    fake.enqueue(inBandError(2, { message: 'model crashed', type: 'server_error', param: null, code: null }));
    const r = await chatStatus({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'a b c d' }],
      stream: true,
    });
    const f = frames(r.text);
    expect(f.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(f.at(-2)!.slice(6)).error.message).toContain('model crashed');

    fake.enqueue(
      inBandError(2, { message: 'model crashed again', type: 'server_error', param: null, code: null }),
    );
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'a b c d' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _ of stream) {
          /* drain */
        }
      })(),
    ).rejects.toThrow(/model crashed again/);
  });

  it('a client that disconnects mid-stream aborts the upstream; the gateway keeps serving', async () => {
    fake.enqueue(reply({ chunks: 20, chunkDelayMs: 50, text: 'w '.repeat(20).trim() }));
    const ac = new AbortController();
    const res = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'long' }], stream: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    const after = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'still here' }],
    });
    expect(after.choices[0]!.message.content).toBe('still here');
  });
});

describe('GET /v1/models (SPEC 4.1)', () => {
  it('lists exactly the visible endpoints: canonical ids and provider-pinned ids, not disabled ones', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) {
      expect(m.object).toBe('model');
      ids.push(m.id);
    }
    expect(ids.sort()).toEqual(['gpt-4o', 'gpt-4o-mini', 'openai-eu/gpt-4o-mini', 'openai/gpt-4o']);
    const pinned = await client.models.retrieve('openai-eu/gpt-4o-mini');
    expect(pinned).toMatchObject({ id: 'openai-eu/gpt-4o-mini', owned_by: 'openai-eu' });
    const canonical = await client.models.retrieve('gpt-4o');
    expect(canonical.id).toBe('gpt-4o');
    await expect(client.models.retrieve('gpt-retired-soon')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('selection and policy', () => {
  it('svc/auto picks the cheapest capable endpoint', async () => {
    const r = await client.chat.completions.create({
      model: 'svc/auto',
      messages: [{ role: 'user', content: 'cheap' }],
    });
    expect(r.model).toBe('gpt-4o-mini');
  });

  it("the organization's provider disallow list gives no_compatible_candidate naming the cause", async () => {
    const patch = await fetch(`${gw.serve.httpUrl}/api/orgs/${gw.boot.org_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider_disallow_list: ['openai'] }),
    });
    expect(patch.status).toBe(200);
    let r = await chatStatus({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    await eventually(
      async () => {
        r = await chatStatus({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
        return r.status === 400;
      },
      3_000,
      'disallow list in the gateway',
    );
    expect(JSON.parse(r.text)).toMatchObject({
      error: { type: 'no_compatible_candidate', code: 'no_compatible_candidate' },
    });
    expect(JSON.parse(r.text).error.message).toContain('disallow');
    await fetch(`${gw.serve.httpUrl}/api/orgs/${gw.boot.org_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider_disallow_list: [] }),
    });
    await eventually(
      async () =>
        (await chatStatus({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).status === 200,
      3_000,
      'allow again',
    );
  });

  it('counts attempts in svc_gateway_attempt_total', async () => {
    const text = await (await fetch(`${gw.serve.httpUrl}/metrics`)).text();
    expect(text).toMatch(/svc_gateway_attempt_total\{provider="openai",outcome="success"\} \d+/);
    expect(text).toMatch(/svc_gateway_attempt_total\{provider="openai",outcome="UpstreamStatus"\} \d+/);
    expect(text).toContain('svc_gateway_time_to_first_byte_seconds_bucket');
    // Each snapshot's loads, the first at start-up included.
    for (const snapshot of ['registry', 'tenancy', 'policy'])
      expect(text).toMatch(
        new RegExp(`svc_gateway_snapshot_reloads_total\\{snapshot="${snapshot}"\\} [1-9]`),
      );
    // By provider lane and model, as the ecosystem's dashboards expect (issue: conventions, item 5).
    expect(text).toMatch(/svc_gateway_tokens_total\{provider="openai",model="gpt-4o",type="input"\} [1-9]/);
    expect(text).toMatch(/svc_gateway_cost_usd_total\{provider="openai",model="gpt-4o"\} [0-9.e-]+/);
    expect(text).toMatch(
      /svc_gateway_upstream_latency_seconds_count\{provider="openai",model="gpt-4o",outcome="success"\} [1-9]/,
    );
    expect(text).toMatch(
      /svc_gateway_time_to_first_token_seconds_count\{provider="openai",model="gpt-4o"\} [1-9]/,
    );
    expect(text).toContain('# TYPE svc_gateway_request_records_total counter');
    expect(text).toMatch(/svc_gateway_request_records_total\{state="published"\} [1-9]/);
  });
});

describe('request.completed (SPEC 2.5, 6)', () => {
  it('one envelope per request on svc.requests.<org>.<request>, message id = request id, priced exactly', async () => {
    const { PostgresBus } = await import('../../src/events/postgres/bus.js');
    const { requestCompletedSchema } = await import('../../src/events/envelopes/request-completed.js');
    fake.enqueue(reply({ text: 'priced reply', tokens: { promptTokens: 1000, completionTokens: 200 } }));
    const { response } = await client.chat.completions
      .create(
        { model: 'gpt-4o', messages: [{ role: 'user', content: 'price me' }], user: 'end-user-7' },
        { headers: { 'svc-enable-tracing': '1' } },
      )
      .withResponse();
    const requestId = response.headers.get('x-svc-request-id')!;
    const bus = new PostgresBus(gw.db.pool, { connectionString: gw.db.url });
    const seen: { subject: string; messageId: string; body: unknown }[] = [];
    const consumer = await bus.consume(
      'test-envelopes',
      'svc.requests.>',
      async (m) => {
        seen.push({
          subject: m.subject,
          messageId: m.messageId,
          body: JSON.parse(Buffer.from(m.data).toString('utf8')),
        });
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    await eventually(async () => seen.some((s) => s.messageId === requestId), 10_000, 'the envelope');
    await consumer.close();
    await bus.close();
    const mine = seen.filter((s) => s.messageId === requestId);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.subject).toBe(`svc.requests.${gw.boot.org_id}.${requestId}`);
    const envelope = requestCompletedSchema.parse(mine[0]!.body);
    expect(envelope).toMatchObject({
      request_id: requestId,
      api_key_id: gw.boot.api_key_id,
      route: '/v1/chat/completions',
      model_requested: 'gpt-4o',
      model_served: 'gpt-4o',
      provider: 'openai',
      provider_model_id: 'gpt-4o-2024-08-06',
      status: 'success',
      http_status: 200,
      funding: 'byok',
      end_user_id: 'end-user-7',
      trace: { full_tracing: true, source: 'header' },
      billing: { status: 'priced' },
    });
    // 1000 x 0.0000025 + 200 x 0.00001 = 0.0025 + 0.002
    expect(envelope.total_cost_usd).toBe('0.0045');
    expect(envelope.cost_lines.map((l) => [l.meter, l.quantity, l.amount])).toEqual([
      ['input_token', 1000, '0.0025'],
      ['output_token', 200, '0.002'],
    ]);
    expect(envelope.bodies?.request).toBeDefined();
    expect(envelope.bodies?.response).toBeDefined();
  });
});
