import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../fakes/azure-openai.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { completedEnvelope } from '../helpers/request-envelopes.js';
import { selfSignedCertificate } from '../helpers/test-tls.js';

// Azure embeddings and responses with the real `openai` SDK against `svc serve` and a fake Azure
// resource: the deployment path, api-key and api-version, the catalog model name echoed, fallback
// from a connection_not_configured candidate to the next one, and responses on the resource host's
// v1 surface (SPEC 4.1 rule 4, 4.7). That surface is always https://{resource}.{domain}, whatever the
// connection's base_url says, so the serve process dials a second, HTTPS fake for that one name
// (test/helpers/connect-to.mjs) and trusts its throwaway certificate.

const KEY = 'azure-resource-key';
const API_VERSION = '2024-10-21';
const RESOURCE_HOST = 'myres.openai.azure.com';
let fake: FakeAzure;
let v1: FakeAzure;
let certDir: string;
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
    deployments: [
      { name: 'emb-prod', model: 'text-embedding-3-small', reply: { embeddingDimensions: 6 } },
      { name: 'img-prod', model: 'gpt-image-1' },
    ],
  });
  const tls = await selfSignedCertificate(RESOURCE_HOST);
  certDir = tls.dir;
  v1 = await startFakeAzure({
    apiKey: KEY,
    apiVersion: API_VERSION,
    tls,
    deployments: [{ name: 'gpt4o-prod', model: 'gpt-4o-2024-08-06' }],
  });
  const preload = fileURLToPath(new URL('../helpers/connect-to.mjs', import.meta.url));
  gw = await startGatewayEnv({
    SVC_GATEWAY_RETRIES: '1',
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`.trim(),
    NODE_EXTRA_CA_CERTS: tls.certFile,
    SVC_TEST_CONNECT_TO: `${RESOURCE_HOST}:443=127.0.0.1:${v1.port}`,
  });
  await upsert('embed-small', 'text-embedding-3-small', 'embeddings');
  await upsert('embed-large', 'text-embedding-3-large', 'embeddings');
  await upsert('chat-only', 'gpt-4o-mini', 'chat');
  await upsert('gpt-4o', 'gpt-4o', 'chat,streaming');
  await upsert('gpt-image-1', 'gpt-image-1', 'images');
  await connect(gw, {
    provider: 'azure',
    secret: KEY,
    baseUrl: fake.url,
    metadata: {
      resource: 'myres',
      api_version: API_VERSION,
      deployments: { 'embed-small': 'emb-prod', 'gpt-4o': 'gpt4o-prod', 'gpt-image-1': 'img-prod' },
    },
  });
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
  await v1?.close();
  if (certDir) await rm(certDir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.reset();
  v1.reset();
});

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

  it('capability gating: a chat-only model is 400 no_compatible_candidate for embeddings', async () => {
    const err = (await client.embeddings
      .create({ model: 'chat-only', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(400);
    expect((err.error as { code: string }).code).toBe('no_compatible_candidate');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('images through an azure deployment', () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

  it('generations: JSON on the deployment path with api-version and api-key; the image back, recorded', async () => {
    const { data: r, response } = await client.images
      .generate({ model: 'gpt-image-1', prompt: 'a lighthouse at dusk' })
      .withResponse();
    expect(r.data?.[0]?.b64_json).toEqual(expect.any(String));
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/img-prod/images/generations');
    expect(sent.query).toEqual({ 'api-version': API_VERSION });
    expect(sent.headers['api-key']).toBe(KEY);
    expect(sent.body).toMatchObject({ prompt: 'a lighthouse at dusk' });
    expect(fake.violations).toEqual([]);
    const id = response.headers.get('x-svc-request-id')!;
    let row: unknown;
    await eventually(
      async () => {
        const res = await fetch(`${gw.serve.httpUrl}/api/requests/${id}?org_id=${gw.boot.org_id}`, {
          headers: { authorization: `Bearer ${gw.admin}` },
        });
        if (res.status !== 200) return false;
        row = await res.json();
        return true;
      },
      15_000,
      'the image request row',
    );
    expect(row).toMatchObject({ route: '/v1/images/generations', provider: 'azure', status: 'success' });
  });

  it('edits: the caller’s form proxied as multipart to the deployment; variations are not an Azure operation', async () => {
    const r = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'add a boat',
      image: await toFile(png, 'harbour.png', { type: 'image/png' }),
    });
    expect(r.data?.length).toBeGreaterThan(0);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/img-prod/images/edits');
    expect(sent.form?.fields).toMatchObject({ prompt: 'add a boat' });
    expect(sent.form?.files.map((f) => [f.field, f.filename, f.bytes.equals(png)])).toEqual([
      ['image', 'harbour.png', true],
    ]);
    const refused = await client.images
      .createVariation({ model: 'gpt-image-1', image: await toFile(png, 'x.png', { type: 'image/png' }) })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(fake.requests.filter((q) => q.path.endsWith('/images/variations'))).toEqual([]);
  });
});

describe('responses through an azure deployment', () => {
  it('buffered: https://{resource}.{domain}/openai/v1/responses, no api-version, the deployment name as model', async () => {
    const { data: r, response } = await client.responses
      .create({ model: 'gpt-4o', input: 'hello resource' })
      .withResponse();
    expect(r.object).toBe('response');
    expect(r.output_text).toBe('hello resource');
    expect(v1.requests).toHaveLength(1);
    const sent = v1.requests[0]!;
    expect(sent.path).toBe('/openai/v1/responses');
    expect(sent.query).toEqual({});
    expect(sent.headers.host).toBe(RESOURCE_HOST);
    expect(sent.headers['api-key']).toBe(KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toEqual({ model: 'gpt4o-prod', input: 'hello resource' });
    expect(v1.violations).toEqual([]);
    // The data-plane origin (the connection's base_url) is not where responses go.
    expect(fake.requests).toHaveLength(0);
    const envelope = await completedEnvelope(gw, response.headers.get('x-svc-request-id')!);
    expect(envelope).toMatchObject({ route: '/v1/responses', provider: 'azure', status: 'success' });
    expect(envelope.usage.completion_tokens).toBe(2);
  });

  it('streamed: the events of the resource host relayed, usage from response.completed', async () => {
    const stream = await client.responses.create({ model: 'gpt-4o', input: 'one two three', stream: true });
    let text = '';
    let usage: OpenAI.Responses.ResponseUsage | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') usage = event.response.usage ?? undefined;
    }
    expect(text).toBe('one two three');
    expect(usage?.output_tokens).toBe(3);
    expect(v1.requests[0]).toMatchObject({
      path: '/openai/v1/responses',
      query: {},
      body: { model: 'gpt4o-prod', stream: true },
    });
    expect(v1.violations).toEqual([]);
  });

  it('an unmapped model is connection_not_configured for responses too, before any call', async () => {
    const err = (await client.responses
      .create({ model: 'chat-only', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(503);
    expect((err.error as { code: string }).code).toBe('connection_not_configured');
    expect(v1.requests).toHaveLength(0);
  });
});
