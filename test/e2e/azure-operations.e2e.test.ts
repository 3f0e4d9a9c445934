import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../fakes/azure-openai.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Issue 9 embeddings with the real `openai` SDK against `svc serve` and a fake Azure resource:
// the deployment path, api-key and api-version, the catalog model name echoed, and fallback from a
// connection_not_configured candidate to the next one (SPEC 4.1 rule 4, 4.7).

const KEY = 'azure-resource-key';
const API_VERSION = '2024-10-21';
let fake: FakeAzure;
let gw: GatewayEnv;
let client: OpenAI;

const upsert = (model: string, providerModelId: string, capabilities: string) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    'azure',
    '--adapter',
    'azure',
    '--model',
    model,
    '--provider-model-id',
    providerModelId,
    '--capabilities',
    capabilities,
    '--input-price-per-token',
    '0.00000002',
    '--output-price-per-token',
    '0.00000002',
  ]);

beforeAll(async () => {
  fake = await startFakeAzure({
    apiKey: KEY,
    apiVersion: API_VERSION,
    deployments: [{ name: 'emb-prod', model: 'text-embedding-3-small', reply: { embeddingDimensions: 6 } }],
  });
  gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '1', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' });
  await upsert('embed-small', 'text-embedding-3-small', 'embeddings');
  await upsert('embed-large', 'text-embedding-3-large', 'embeddings');
  await upsert('chat-only', 'gpt-4o', 'chat');
  await gw.svc([
    'connections',
    'create',
    '--project',
    gw.boot.project_id,
    '--provider',
    'azure',
    '--name',
    'primary',
    '--secret',
    KEY,
    '--base-url',
    fake.url,
    '--metadata',
    JSON.stringify({
      resource: 'myres',
      api_version: API_VERSION,
      deployments: { 'embed-small': 'emb-prod' },
    }),
  ]);
  client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  await eventually(
    async () => {
      const r = await fetch(`${gw.serve.httpUrl}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.boot.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'embed-small', input: 'ping' }),
      });
      return r.status === 200;
    },
    10_000,
    'gateway snapshots',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('embeddings through an azure deployment', () => {
  it('buffered: the deployment path, api-version and api-key upstream; the catalog model name back', async () => {
    const r = await client.embeddings.create({
      model: 'embed-small',
      input: ['one', 'two'],
      encoding_format: 'float',
    });
    expect(r.object).toBe('list');
    expect(r.model).toBe('embed-small');
    expect(r.data.map((d) => d.embedding.length)).toEqual([6, 6]);
    expect(r.usage.prompt_tokens).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(1);
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/openai/deployments/emb-prod/embeddings');
    expect(sent.query).toEqual({ 'api-version': API_VERSION });
    expect(sent.headers['api-key']).toBe(KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toMatchObject({ model: 'embed-small', input: ['one', 'two'] });
    expect(fake.violations).toEqual([]);
  });

  it('a candidate with no deployment mapping falls back to the next without an upstream call', async () => {
    const r = await client.embeddings.create({ model: 'embed-large,embed-small', input: 'fall forward' });
    expect(r.model).toBe('embed-small');
    expect(fake.requests.map((q) => q.path)).toEqual(['/openai/deployments/emb-prod/embeddings']);
  });

  it('alone, the unmapped model is 503 connection_not_configured', async () => {
    const err = (await client.embeddings
      .create({ model: 'embed-large', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect((err.error as { code: string }).code).toBe('connection_not_configured');
    expect(fake.requests).toHaveLength(0);
  });

  it('capability gating: a chat-only model is 400 no_compatible_candidate', async () => {
    const err = (await client.embeddings
      .create({ model: 'chat-only', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(400);
    expect((err.error as { code: string }).code).toBe('no_compatible_candidate');
    expect(fake.requests).toHaveLength(0);
  });
});
