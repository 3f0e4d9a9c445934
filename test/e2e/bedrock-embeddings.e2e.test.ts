import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { exception, reply } from '../fakes/bedrock-runtime.js';
import { type BedrockGateway, startBedrockGateway } from '../fakes/bedrock-runtime-env.js';
import { eventually } from '../helpers/gateway-env.js';
import { completedEnvelope } from '../helpers/request-envelopes.js';

// SPEC 4.1 rule 4 through `svc serve` with the real `openai` SDK: Titan text embeddings through the
// runtime's invoke operation, one SigV4-signed call per input, terminal once a call completed
// (SPEC 4.1 rule 4, 4.7). The fake verifies every signature independently.

let env: BedrockGateway;
let client: OpenAI;
const TITAN = 'amazon.titan-embed-text-v2:0';
const INVOKE_PATH = `/model/${encodeURIComponent(TITAN)}/invoke`;
const PRICE = '0.00000002';

const upsert = (lane: string, model: string, id: string, capabilities: string) =>
  env.gw.svc([
    'registry',
    'upsert',
    '--lane',
    lane,
    '--adapter',
    'bedrock',
    '--model',
    model,
    '--provider-model-id',
    id,
    '--base-url',
    'https://unused.invalid',
    '--capabilities',
    capabilities,
    '--input-price-per-token',
    PRICE,
    '--output-price-per-token',
    PRICE,
  ]);

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${env.gw.serve.httpUrl}/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.gw.boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    headers: res.headers,
    json: (await res.json()) as { error: Record<string, unknown> },
  };
};

/** The fake's vector for a text (first component), to check that replies keep input order. */
const firstComponent = (text: string) => ((text.charCodeAt(0) % 17) - 8) / 8;

beforeAll(async () => {
  env = await startBedrockGateway({ SVC_GATEWAY_RETRIES: '1' });
  client = env.client;
  await upsert('bedrock', 'titan-embed', TITAN, 'embeddings');
  await upsert('bedrock-b', 'titan-embed-b', 'amazon.titan-embed-text-v1', 'embeddings');
  await upsert('bedrock', 'cohere-embed', 'cohere.embed-english-v3', 'embeddings');
  await upsert('bedrock', 'claude-responses', 'anthropic.claude-3-haiku-20240307-v1:0', 'chat,responses');
  await eventually(
    async () => (await post('/embeddings', { model: 'titan-embed', input: 'ping' })).status === 200,
    10_000,
    'the embedding endpoints in the gateway',
  );
});
afterAll(async () => {
  await env?.stop();
});
beforeEach(() => env.fake.reset());

describe('Titan text embeddings through invoke', () => {
  it('three inputs fan out to three signed invokes, in order, charged once with the summed tokens', async () => {
    env.fake.enqueue(
      reply({ usage: { inputTokens: 3, outputTokens: 0 } }),
      reply({ usage: { inputTokens: 4, outputTokens: 0 } }),
      reply({ usage: { inputTokens: 5, outputTokens: 0 } }),
    );
    const inputs = ['alpha one', 'bravo two', 'charlie three'];
    const { data: r, response } = await client.embeddings
      .create({ model: 'titan-embed', input: inputs, encoding_format: 'float', dimensions: 4 })
      .withResponse();
    expect(r.object).toBe('list');
    expect(r.model).toBe('titan-embed');
    expect(r.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(r.data.map((d) => d.embedding[0])).toEqual(inputs.map(firstComponent));
    expect(r.usage).toEqual({ prompt_tokens: 12, total_tokens: 12 });

    const sent = env.fake.requests;
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((q) => q.path))).toEqual(new Set([INVOKE_PATH]));
    expect(sent.map((q) => (q.body as { inputText: string }).inputText).sort()).toEqual(inputs);
    expect(sent.every((q) => (q.body as { dimensions?: number }).dimensions === 4)).toBe(true);
    for (const q of sent) {
      expect(q.headers.authorization).toMatch(/Credential=[^/]+\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
      expect(q.signedHeaders).not.toContain('x-svc-request-id');
    }
    expect(env.fake.violations).toEqual([]);

    const envelope = await completedEnvelope(env.gw, response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/embeddings',
      provider: 'bedrock',
      model_served: 'titan-embed',
      status: 'success',
      usage: { prompt_tokens: 12, completion_tokens: 0 },
    });
    // 12 x 0.00000002, one line
    expect(envelope.cost_lines.map((l) => [l.meter, l.quantity, l.amount])).toEqual([
      ['input_token', 12, '0.00000024'],
    ]);
  });

  it('a failure after another invoke completed is terminal: no retry, no fallback, the completed calls charged', async () => {
    env.fake.enqueue(
      reply({ usage: { inputTokens: 5, outputTokens: 0 } }),
      reply({ usage: { inputTokens: 7, outputTokens: 0 } }),
      exception('ThrottlingException', 429, 'Rate exceeded'),
    );
    const err = (await client.embeddings
      .create({ model: 'titan-embed,titan-embed-b', input: ['a', 'b', 'c'], encoding_format: 'float' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(429);
    expect(err.error).toMatchObject({ type: 'rate_limit_error', code: 'ThrottlingException' });
    expect(err.message).toContain('2 of 3 embeddings completed');
    // Throttling is retryable and fallback-eligible on its own; here nothing was tried again.
    expect(env.fake.requests).toHaveLength(3);
    expect(new Set(env.fake.requests.map((q) => q.path))).toEqual(new Set([INVOKE_PATH]));

    const envelope = await completedEnvelope(env.gw, err.headers!.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({
      route: '/v1/embeddings',
      status: 'error',
      http_status: 429,
      usage: { prompt_tokens: 12 },
    });
    expect(envelope.attempts).toHaveLength(1);
    expect(envelope.cost_lines.map((l) => [l.meter, l.quantity, l.amount])).toEqual([
      ['input_token', 12, '0.00000024'],
    ]);
  });

  it('a failure before any invoke completed is an ordinary attempt failure: retried on the same candidate', async () => {
    env.fake.enqueue(exception('ThrottlingException', 429, 'Rate exceeded'));
    const r = await client.embeddings.create({
      model: 'titan-embed',
      input: ['x', 'y'],
      encoding_format: 'float',
    });
    expect(r.data).toHaveLength(2);
    expect(env.fake.requests).toHaveLength(3);
  });

  it('token-id input and a non-float encoding_format are refused by name before any invoke', async () => {
    for (const [body, param] of [
      [{ model: 'titan-embed', input: [1, 2, 3] }, 'input'],
      [{ model: 'titan-embed', input: [[1, 2]] }, 'input'],
      [{ model: 'titan-embed', input: 'x', encoding_format: 'base64' }, 'encoding_format'],
    ] as const) {
      const r = await post('/embeddings', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param });
    }
    expect(env.fake.requests).toHaveLength(0);
  });

  it('the SDK default (base64) is refused too, naming encoding_format', async () => {
    const err = (await client.embeddings
      .create({ model: 'titan-embed', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(400);
    expect(err.param).toBe('encoding_format');
  });
});

describe('operations the managed runtime does not serve', () => {
  it('embeddings for a model outside the text-embedding family: the structured unsupported error', async () => {
    const r = await post('/embeddings', { model: 'cohere-embed', input: 'x', encoding_format: 'float' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_operation' });
    expect(env.fake.requests).toHaveLength(0);
  });

  it('responses: the structured unsupported error, no upstream call', async () => {
    const r = await post('/responses', { model: 'claude-responses', input: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_operation' });
    expect(String(r.json.error.message)).toContain('responses');
    expect(env.fake.requests).toHaveLength(0);
  });
});
