import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cutStream,
  type FakeOpenAI,
  onPath,
  rawBody,
  reply,
  startFakeOpenAI,
  status,
} from '../fakes/openai-upstream.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { completedEnvelope } from '../helpers/request-envelopes.js';

// Issues 8 and 9 on the reference provider: POST /v1/embeddings and POST /v1/responses through the
// one request path with the real `openai` SDK against `svc serve` (SPEC 4.1 rules 3-4, 7.1, 7.4).

let fake: FakeOpenAI;
let gw: GatewayEnv;
let client: OpenAI;

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${gw.serve.httpUrl}/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    headers: res.headers,
    json: (await res.json()) as { error: Record<string, unknown> },
  };
};

const envelopeOf = (requestId: string) => completedEnvelope(gw, requestId);

const upsert = (model: string, capabilities: string, input: string, output: string) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    'openai',
    '--adapter',
    'openai',
    '--model',
    model,
    '--provider-model-id',
    `${model}-upstream`,
    '--base-url',
    fake.url,
    '--capabilities',
    capabilities,
    '--input-price-per-token',
    input,
    '--output-price-per-token',
    output,
  ]);

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '1', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' });
  await upsert('text-embedding-3-small', 'embeddings', '0.00000002', '0.00000002');
  await upsert('gpt-4o', 'chat,streaming,responses', '0.0000025', '0.00001');
  await upsert('gpt-4o-mini', 'chat,streaming', '0.00000015', '0.0000006');
  await upsert('omni-moderation-latest', 'moderations', '0', '0');
  await connect(gw, { provider: 'openai', secret: 'sk-x' });
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(
    async () =>
      (await post('/embeddings', { model: 'text-embedding-3-small', input: 'ping' })).status === 200,
    10_000,
    'gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('POST /v1/moderations (SPEC 4.1)', () => {
  it('the SDK without a model gets the default moderation model, served by the reference provider, priced at zero and recorded', async () => {
    const { data: r, response } = await client.moderations
      .create({ input: ['a kind word', 'I will kill the process'] })
      .withResponse();
    expect(r.model).toBe('omni-moderation-latest');
    expect(r.results.map((x) => x.flagged)).toEqual([false, true]);
    expect(r.results[1]!.categories.violence).toBe(true);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/moderations');
    expect(sent.apiKey).toBe('sk-x');
    expect(sent.body).toEqual({
      model: 'omni-moderation-latest-upstream',
      input: ['a kind word', 'I will kill the process'],
    });
    const requestId = response.headers.get('x-svc-request-id')!;
    const envelope = await envelopeOf(requestId);
    expect(envelope).toMatchObject({
      route: '/v1/moderations',
      model_requested: 'omni-moderation-latest',
      model_served: 'omni-moderation-latest',
      status: 'success',
      http_status: 200,
      total_cost_usd: '0',
      billing: { status: 'priced' },
    });
    expect(envelope.cost_lines.every((l) => l.amount === '0')).toBe(true);
  });

  it('multimodal parts pass through; a chat model is refused before any call; bad input is a 400 naming input', async () => {
    const parts = await client.moderations.create({
      model: 'omni-moderation-latest',
      input: [
        { type: 'text', text: 'kill' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ],
    });
    expect(parts.results).toHaveLength(1);
    expect(parts.results[0]!.category_applied_input_types.violence).toEqual(['text', 'image']);
    const calls = fake.requests.length;
    const chatModel = await post('/moderations', { model: 'gpt-4o', input: 'hi' });
    expect(chatModel.status).toBe(400);
    expect(chatModel.json.error).toMatchObject({
      type: 'no_compatible_candidate',
      code: 'no_compatible_candidate',
    });
    expect(String(chatModel.json.error.message)).toMatch(/moderations/);
    const bad = await post('/moderations', { input: 42 });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ param: 'input' });
    const empty = await post('/moderations', { input: [] });
    expect(empty.status).toBe(400);
    expect(fake.requests.length).toBe(calls);
  });
});

describe('POST /v1/embeddings', () => {
  it('buffered through the openai adapter: {base}/embeddings with the upstream id, the catalog model back, priced once', async () => {
    fake.enqueue(reply({ path: '/v1/embeddings', tokens: { promptTokens: 1000 }, embeddingDimensions: 8 }));
    const { data: r, response } = await client.embeddings
      .create({
        model: 'text-embedding-3-small',
        input: ['alpha', 'beta'],
        encoding_format: 'float',
        user: 'u-1',
      })
      .withResponse();
    expect(r.object).toBe('list');
    expect(r.model).toBe('text-embedding-3-small');
    expect(r.data.map((d) => [d.index, d.embedding.length])).toEqual([
      [0, 8],
      [1, 8],
    ]);
    expect(r.usage).toEqual({ prompt_tokens: 1000, total_tokens: 1000 });
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/embeddings');
    expect(sent.apiKey).toBe('sk-x');
    expect(sent.body).toEqual({
      model: 'text-embedding-3-small-upstream',
      input: ['alpha', 'beta'],
      encoding_format: 'float',
      user: 'u-1',
    });

    const requestId = response.headers.get('x-svc-request-id')!;
    expect(requestId).toMatch(/^req_/);
    const envelope = await envelopeOf(requestId);
    expect(envelope).toMatchObject({
      route: '/v1/embeddings',
      model_requested: 'text-embedding-3-small',
      model_served: 'text-embedding-3-small',
      provider_model_id: 'text-embedding-3-small-upstream',
      status: 'success',
      http_status: 200,
      end_user_id: 'u-1',
      usage: { prompt_tokens: 1000, completion_tokens: 0 },
    });
    // 1000 x 0.00000002
    expect(envelope.total_cost_usd).toBe('0.00002');
    expect(envelope.cost_lines.map((l) => [l.meter, l.quantity, l.amount])).toEqual([
      ['input_token', 1000, '0.00002'],
    ]);

    // The ingest role of the same `svc serve` turns it into the analytics row the query API reads.
    let row: unknown;
    await eventually(
      async () => {
        const r = await fetch(`${gw.serve.httpUrl}/api/requests/${requestId}?org_id=${gw.boot.org_id}`, {
          headers: { authorization: `Bearer ${gw.admin}` },
        });
        if (r.status !== 200) return false;
        row = await r.json();
        return true;
      },
      15_000,
      'the analytics row',
    );
    expect(row).toMatchObject({
      route: '/v1/embeddings',
      model_served: 'text-embedding-3-small',
      status: 'success',
      prompt_tokens: 1000,
      completion_tokens: 0,
      total_cost_usd: '0.00002',
      billing_status: 'priced',
      end_user_id: 'u-1',
    });
  });

  it('token-id input and base64 pass through to the reference provider', async () => {
    const r = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: [[1, 2, 3]],
      encoding_format: 'base64',
    });
    // Asked for explicitly, base64 comes back as the upstream encoded it: 1536 float32 values.
    const encoded = r.data[0]!.embedding as unknown as string;
    expect(Buffer.from(encoded, 'base64')).toHaveLength(1536 * 4);
    expect(fake.requests.at(-1)!.body).toMatchObject({ input: [[1, 2, 3]], encoding_format: 'base64' });
  });

  it('capability gating: a model without embeddings is 400 no_compatible_candidate, no upstream call', async () => {
    const r = await post('/embeddings', { model: 'gpt-4o-mini', input: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'no_compatible_candidate', code: 'no_compatible_candidate' });
    expect(r.json.error.message).toContain('embeddings');
    expect(r.headers.get('x-svc-request-id')).toMatch(/^req_/);
    expect(fake.requests).toHaveLength(0);
  });

  it('request-global malformed input is 400 before any upstream call, naming the param', async () => {
    for (const [body, param] of [
      [{ model: 'text-embedding-3-small', input: [] }, 'input'],
      [{ model: 'text-embedding-3-small', input: ['a', 1] }, 'input'],
      [{ model: 'text-embedding-3-small', input: [[1, -2]] }, 'input'],
      [{ model: 'text-embedding-3-small' }, 'input'],
      [{ model: 'text-embedding-3-small', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: 'text-embedding-3-small', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ input: 'x' }, 'model'],
    ] as const) {
      const r = await post('/embeddings', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('an upstream 500 is retried, then surfaced in the primary envelope', async () => {
    fake.enqueue(status(500), status(500));
    const r = await post('/embeddings', { model: 'text-embedding-3-small', input: 'x' });
    expect(r.status).toBe(502);
    expect(r.json.error).toMatchObject({ type: 'upstream_error' });
    expect(fake.requests).toHaveLength(2);
  });
});

describe('POST /v1/responses', () => {
  it('buffered: {base}/responses with the upstream id, the Response object relayed, usage priced', async () => {
    fake.enqueue(
      reply({
        path: '/v1/responses',
        text: 'hello back',
        tokens: { promptTokens: 400, completionTokens: 100 },
      }),
    );
    const { data: r, response } = await client.responses
      .create({ model: 'gpt-4o', input: 'hello', instructions: 'be brief' })
      .withResponse();
    expect(r.object).toBe('response');
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe('hello back');
    expect(r.usage).toMatchObject({ input_tokens: 400, output_tokens: 100 });
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/responses');
    expect(sent.body).toEqual({ model: 'gpt-4o-upstream', input: 'hello', instructions: 'be brief' });
    const envelope = await envelopeOf(response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/responses',
      stream: false,
      status: 'success',
      usage: { prompt_tokens: 400, completion_tokens: 100 },
    });
    // 400 x 0.0000025 + 100 x 0.00001 = 0.001 + 0.001
    expect(envelope.total_cost_usd).toBe('0.002');
  });

  it('streamed: the upstream events relayed verbatim, usage from response.completed', async () => {
    fake.enqueue(
      reply({
        path: '/v1/responses',
        text: 'one two three',
        tokens: { promptTokens: 40, completionTokens: 3 },
      }),
    );
    const { data: stream, response } = await client.responses
      .create({ model: 'gpt-4o', input: 'count', stream: true })
      .withResponse();
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('one two three');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(completed?.usage).toMatchObject({ input_tokens: 40, output_tokens: 3 });
    expect(fake.requests.at(-1)!.body).toMatchObject({ model: 'gpt-4o-upstream', stream: true });
    const envelope = await envelopeOf(response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/responses',
      stream: true,
      status: 'success',
      usage: { prompt_tokens: 40, completion_tokens: 3 },
    });
    // 40 x 0.0000025 + 3 x 0.00001 = 0.0001 + 0.00003
    expect(envelope.total_cost_usd).toBe('0.00013');
  });

  it('a stream cut before response.completed ends with an error event, recorded as failed and priced from what was relayed', async () => {
    fake.enqueue(cutStream(7, { path: '/v1/responses', text: 'alpha beta gamma delta epsilon' }));
    const body = JSON.stringify({ model: 'gpt-4o', input: 'x', stream: true });
    const res = await fetch(`${gw.serve.httpUrl}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    const raw = await res.text();
    // SPEC 7.6 rule 1: the terminal error event, then data: [DONE], then nothing.
    expect(raw.endsWith('\n\ndata: [DONE]\n\n')).toBe(true);
    const events = raw
      .slice(0, -'data: [DONE]\n\n'.length)
      .trim()
      .split('\n\n')
      .map((frame) => {
        const [event, data] = frame.split('\n');
        return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
      });
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data).toMatchObject({ type: 'error', code: 'upstream_stream_error' });
    const relayed = events
      .filter((e) => e.event === 'response.output_text.delta')
      .map((e) => e.data.delta as string)
      .join('');
    expect(relayed).toBe('alpha beta gamma');
    const envelope = await envelopeOf(res.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/responses',
      status: 'error',
      usage: {
        prompt_tokens: Math.ceil(Buffer.byteLength(body) / 4),
        completion_tokens: Math.ceil(Buffer.byteLength(relayed) / 4),
      },
    });
  });

  it('a stream ending in response.failed is relayed as sent and recorded as a failed stream', async () => {
    const frames = [
      { type: 'response.created', response: { id: 'resp_f', status: 'in_progress' } },
      { type: 'response.output_text.delta', delta: 'par' },
      {
        type: 'response.failed',
        response: {
          id: 'resp_f',
          status: 'failed',
          error: { code: 'server_error', message: 'the model failed mid-answer' },
          usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 },
        },
      },
    ];
    fake.enqueue(
      onPath(
        '/v1/responses',
        rawBody(
          200,
          frames.map((f) => `event: ${f.type}\ndata: ${JSON.stringify(f)}\n\n`).join(''),
          'text/event-stream',
        ),
      ),
    );
    const res = await fetch(`${gw.serve.httpUrl}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', input: 'x', stream: true }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('event: response.failed\n');
    const envelope = await envelopeOf(res.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/responses',
      status: 'error',
      error: { code: 'upstream_stream_error' },
      usage: { prompt_tokens: 5, completion_tokens: 1 },
    });
  });

  it('paid hosted tools are refused on a route with a reference-provider candidate; file_search is hosted', async () => {
    const r = await post('/responses', {
      model: 'gpt-4o',
      input: 'search the web',
      tools: [{ type: 'web_search_preview' }, { type: 'function', name: 'f', parameters: {} }],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'bad_request', param: 'tools' });
    expect(String(r.json.error.message)).toContain('web_search_preview');
    expect(fake.requests).toHaveLength(0);
    // Hosted file_search is not forwarded: the service searches the caller's stores first (SPEC 4.1),
    // and a store it cannot see ends the request before any upstream call.
    const tools = [{ type: 'file_search', vector_store_ids: ['vs_1'] }];
    const unknown = await post('/responses', { model: 'gpt-4o', input: 'find it', tools });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ type: 'not_found_error' });
    expect(fake.requests).toHaveLength(0);
  });

  it('responses take responses or chat models; others are 400 no_compatible_candidate', async () => {
    const r = await post('/responses', { model: 'text-embedding-3-small', input: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'no_compatible_candidate' });
    expect(fake.requests).toHaveLength(0);
    const chatModel = await client.responses.create({ model: 'gpt-4o-mini', input: 'chat models qualify' });
    expect(chatModel.output_text).toBe('chat models qualify');
    expect(fake.requests.map((q) => q.path)).toEqual(['/v1/responses']);
  });
});

describe('providers without the operation', () => {
  beforeAll(async () => {
    await gw.svc([
      'registry',
      'upsert',
      '--lane',
      'anthropic',
      '--adapter',
      'anthropic',
      '--model',
      'claude-x',
      '--provider-model-id',
      'claude-x-upstream',
      '--base-url',
      'http://127.0.0.1:9',
      '--capabilities',
      'chat,streaming',
      '--input-price-per-token',
      '0.000003',
      '--output-price-per-token',
      '0.000015',
    ]);
    await connect(gw, { provider: 'anthropic', secret: 'sk-ant-x' });
    await eventually(
      async () => (await post('/responses', { model: 'claude-x', input: 'x' })).status === 400,
      10_000,
      'the anthropic endpoint and connection in the gateway',
    );
    fake.reset();
  });

  it('responses on the messages-style provider: the structured unsupported error, then fallback to the next candidate', async () => {
    const alone = await post('/responses', { model: 'claude-x', input: 'x' });
    expect(alone.status).toBe(400);
    expect(alone.json.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_operation' });
    expect(String(alone.json.error.message)).toContain('anthropic');
    const next = await client.responses.create({ model: 'claude-x,gpt-4o', input: 'fall forward' });
    expect(next.output_text).toBe('fall forward');
    expect(fake.requests.map((q) => q.path)).toEqual(['/v1/responses']);
  });

  it('embeddings on the messages-style provider are gated out before dispatch', async () => {
    const r = await post('/embeddings', { model: 'claude-x', input: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'no_compatible_candidate' });
  });
});

describe('wallet traffic', () => {
  let walletKey: string;
  let workspaceId: string;
  const embed = (key: string) =>
    fetch(`${gw.serve.httpUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'held' }),
    });

  beforeAll(async () => {
    await gw.svc([
      'keys',
      'platform',
      'set',
      '--provider',
      'openai',
      '--secret',
      'sk-platform',
      '--base-url',
      fake.url,
    ]);
    const boot = await gw.svc([
      'bootstrap',
      '--workspace',
      'Wallet Ws',
      '--org',
      'Wallet Org',
      '--project',
      'Wallet',
    ]);
    walletKey = boot.api_key as string;
    workspaceId = boot.workspace_id as string;
    await eventually(
      async () => (await embed(walletKey)).status === 402,
      10_000,
      'the wallet project in the gateway',
    );
    fake.reset();
  });

  it('an embeddings request on a platform key holds escrow first: 402 without funds, served once granted', async () => {
    const refused = await embed(walletKey);
    const refusedBody = (await refused.json()) as { error: Record<string, unknown> };
    expect(refused.status).toBe(402);
    expect(refusedBody.error).toMatchObject({
      type: 'insufficient_quota',
      code: 'insufficient_funds',
    });
    expect(fake.requests).toHaveLength(0);

    const grant = await fetch(`${gw.serve.httpUrl}/api/workspaces/${workspaceId}/wallet/grants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount_usd: '1', reason: 'embeddings test', idempotency_key: 'emb-1' }),
    });
    expect(grant.status).toBe(201);
    const served = await embed(walletKey);
    expect(served.status).toBe(200);
    expect(fake.requests.at(-1)!.apiKey).toBe('sk-platform');
    const envelope = await envelopeOf(served.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({ route: '/v1/embeddings', funding: 'wallet', status: 'success' });
  });
});
