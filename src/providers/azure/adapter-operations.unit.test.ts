import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../../../test/fakes/azure-openai.js';
import {
  attemptTarget,
  azureCredentials,
  azureEndpoint,
} from '../../../test/fixtures/azure/azure.fixtures.js';
import type { CanonicalRequest } from '../contract.js';
import { configureUpstreams } from '../destinations.js';
import type { JsonOutcome, RelayedEvent } from '../provider.js';
import { azureAdapter } from './adapter.js';

// SPEC 4.7 deployment-host embeddings and responses through the adapter against the fake resource.
// The responses call always names the resource host https://{resource}.{domain}; the upstream
// client is wrapped so that this one host is dialled on the fake, and the URL the adapter chose is
// kept for the assertions.

const dialled = vi.hoisted(() => ({ fake: '', urls: [] as string[] }));
vi.mock('../http.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../http.js')>();
  return {
    ...real,
    callUpstream: (options: Parameters<typeof real.callUpstream>[0]) => {
      dialled.urls.push(options.url);
      const u = new URL(options.url);
      const url =
        u.host === 'myres.openai.azure.com' ? `${dialled.fake}${u.pathname}${u.search}` : options.url;
      return real.callUpstream({ ...options, url });
    },
  };
});

let fake: FakeAzure;
const API_VERSION = '2024-10-21';

beforeAll(async () => {
  // The fake listens on 127.0.0.1 and the tenant's connection points at it (SPEC 4.7 tenant destinations).
  configureUpstreams({ allowPrivateDestinations: true });
  fake = await startFakeAzure({
    apiKey: 'azure-resource-key',
    apiVersion: API_VERSION,
    deployments: [
      { name: 'gpt4o-prod', model: 'gpt-4o-2024-08-06', reply: { text: 'from the deployment' } },
      { name: 'emb-prod', model: 'text-embedding-3-small', reply: { embeddingDimensions: 4 } },
    ],
  });
  dialled.fake = fake.url;
});
afterAll(() => fake?.close());
beforeEach(() => {
  fake.reset();
  dialled.urls.length = 0;
});

const request = (operation: 'embeddings' | 'responses', raw: Record<string, unknown>): CanonicalRequest => ({
  operation,
  route: operation === 'embeddings' ? '/v1/embeddings' : '/v1/responses',
  model: String(raw.model),
  messages: [],
  stream: raw.stream === true,
  includeUsage: false,
  raw,
});

const credentials = azureCredentials({
  api_version: API_VERSION,
  deployments: { 'embed-small': 'emb-prod', 'gpt-4o': 'gpt4o-prod' },
});
const embedEndpoint = azureEndpoint({ model: 'embed-small', provider_model_id: 'text-embedding-3-small' });

const replyOf = (outcome: JsonOutcome) => {
  if (!outcome.ok || !('reply' in outcome)) throw new Error(`expected a reply: ${JSON.stringify(outcome)}`);
  return outcome.reply;
};

describe('embeddings', () => {
  it('the deployment path with api-version and api-key; the catalog model name echoed; usage read', async () => {
    const creds = { ...credentials, baseUrl: fake.url };
    const outcome = await azureAdapter.embeddings!(
      request('embeddings', { model: 'embed-small', input: ['a', 'b'] }),
      attemptTarget(embedEndpoint, creds),
    );
    const reply = replyOf(outcome);
    expect(reply.body).toMatchObject({ object: 'list', model: 'embed-small' });
    expect((reply.body.data as unknown[]).length).toBe(2);
    expect(reply.usage).toMatchObject({ completion_tokens: 0 });
    expect(reply.usage!.prompt_tokens).toBeGreaterThan(0);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/emb-prod/embeddings');
    expect(sent.query).toEqual({ 'api-version': API_VERSION });
    expect(sent.headers['api-key']).toBe('azure-resource-key');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toMatchObject({ model: 'embed-small', input: ['a', 'b'] });
    expect(fake.violations).toEqual([]);
  });

  it('no deployment mapping: connection_not_configured before any upstream call, fallback-eligible', async () => {
    const outcome = await azureAdapter.embeddings!(
      request('embeddings', { model: 'embed-large', input: 'x' }),
      attemptTarget(azureEndpoint({ model: 'embed-large', provider_model_id: 'x' }), credentials),
    );
    expect(outcome).toMatchObject({
      ok: false,
      failure: { fallback: true, surface: { status: 503, code: 'connection_not_configured' } },
    });
    expect(dialled.urls).toEqual([]);
  });
});

describe('responses', () => {
  const endpoint = azureEndpoint({ model: 'gpt-4o', provider_model_id: 'gpt-4o' });

  it('buffered: https://{resource}.{domain}/openai/v1/responses, no api-version, the deployment as model', async () => {
    // Even with a data-plane origin override, the v1 surface lives on the resource host.
    const outcome = await azureAdapter.responses!(
      request('responses', { model: 'gpt-4o', input: 'hi' }),
      attemptTarget(endpoint, { ...credentials, baseUrl: 'http://127.0.0.1:9' }),
    );
    const reply = replyOf(outcome);
    expect(dialled.urls).toEqual(['https://myres.openai.azure.com/openai/v1/responses']);
    expect(reply.body).toMatchObject({ object: 'response', status: 'completed' });
    expect(reply.usage!.completion_tokens).toBe(3);
    const sent = fake.requests.at(-1)!;
    expect(sent).toMatchObject({
      path: '/openai/v1/responses',
      query: {},
      body: { model: 'gpt4o-prod', input: 'hi' },
    });
    expect(sent.headers['api-key']).toBe('azure-resource-key');
    expect(fake.violations).toEqual([]);
  });

  it('streamed: the events relayed in order, usage on response.completed', async () => {
    const outcome = await azureAdapter.responses!(
      request('responses', { model: 'gpt-4o', input: 'hi', stream: true }),
      attemptTarget(endpoint, credentials),
    );
    if (!outcome.ok || !('stream' in outcome)) throw new Error('expected a stream');
    const events: RelayedEvent[] = [];
    for await (const e of outcome.stream) events.push(e);
    expect(events[0]!.event).toBe('response.created');
    expect(events.at(-1)!.event).toBe('response.completed');
    expect(events.at(-1)!.usage?.completion_tokens).toBe(3);
    expect(events.filter((e) => e.usage)).toHaveLength(1);
    expect(fake.requests.at(-1)).toMatchObject({ query: {}, body: { model: 'gpt4o-prod', stream: true } });
    expect(fake.violations).toEqual([]);
  });

  it('an unserved deployment name is the upstream 404 DeploymentNotFound', async () => {
    const outcome = await azureAdapter.responses!(
      request('responses', { model: 'gpt-4o', input: 'hi' }),
      attemptTarget(
        endpoint,
        azureCredentials({ api_version: API_VERSION, deployments: { 'gpt-4o': 'retired' } }),
      ),
    );
    expect(outcome).toMatchObject({
      ok: false,
      failure: { kind: 'UpstreamStatus', status_code: 404, providerCode: 'DeploymentNotFound' },
    });
  });
});
