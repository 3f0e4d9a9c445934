import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../../../test/fakes/azure-openai.js';
import {
  attemptTarget,
  azureCredentials,
  azureEndpoint,
  chatRequest,
} from '../../../test/fixtures/azure/azure.fixtures.js';
import type { CanonicalChunk } from '../contract.js';
import { configureUpstreams } from '../destinations.js';
import { azureAdapter } from './adapter.js';
import { azureHttp } from './client.js';
import { deploymentCall, embeddingsRequest, responsesRequest } from './requests.js';

// SPEC 4.7 deployment-host adapter against the fake resource, which asserts api-key (never
// Authorization), the api-version query and the path forms.

let fake: FakeAzure;
const API_VERSION = '2024-10-21';

beforeAll(async () => {
  // The fake listens on 127.0.0.1 and the tenant's connection points at it (SPEC 4.7 tenant destinations).
  configureUpstreams({ allowPrivateDestinations: true });
  fake = await startFakeAzure({
    apiKey: 'azure-resource-key',
    apiVersion: API_VERSION,
    deployments: [
      { name: 'gpt4o-prod', model: 'gpt-4o' },
      { name: 'emb', model: 'text-embedding-3-small' },
    ],
  });
});
afterAll(() => fake?.close());
beforeEach(() => fake.reset());

const target = (over: Record<string, unknown> = {}) =>
  attemptTarget(azureEndpoint(), azureCredentials({ api_version: API_VERSION, ...over }, fake.url));

describe('chat', () => {
  it('buffered: the deployment path, api-version, api-key; the primary-shaped reply relayed', async () => {
    const outcome = await azureAdapter.chat(chatRequest(), target());
    if (!outcome.ok || !('reply' in outcome)) throw new Error(`expected a reply: ${JSON.stringify(outcome)}`);
    expect(outcome.reply.message.content).toBe('hello azure');
    expect(outcome.reply.usage?.total_tokens).toBeGreaterThan(0);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/gpt4o-prod/chat/completions');
    expect(sent.query).toEqual({ 'api-version': API_VERSION });
    expect(sent.headers['api-key']).toBe('azure-resource-key');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.headers['x-svc-request-id']).toBe('req_test');
    expect(fake.violations).toEqual([]);
  });

  it('streaming and tool fields go out unchanged, with include_usage added', async () => {
    const tools = [
      { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } },
    ];
    const request = chatRequest({
      raw: { stream: true, tools, tool_choice: 'auto', parallel_tool_calls: false },
    });
    const outcome = await azureAdapter.chat(request, target());
    if (!outcome.ok || !('stream' in outcome)) throw new Error('expected a stream');
    const chunks: CanonicalChunk[] = [];
    for await (const c of outcome.stream) chunks.push(c);
    expect(chunks.map((c) => c.delta.content ?? '').join('')).toBe('hello azure');
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(2);
    expect(fake.requests.at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    expect(fake.violations).toEqual([]);
  });

  it('an unserved deployment is the upstream 404 DeploymentNotFound, eligible for fallback', async () => {
    fake.setDeployments([{ name: 'gpt4o-prod', model: 'gpt-4o', script: 'not-found' }]);
    const outcome = await azureAdapter.chat(chatRequest(), target());
    expect(outcome).toMatchObject({
      ok: false,
      failure: {
        kind: 'UpstreamStatus',
        status_code: 404,
        providerCode: 'DeploymentNotFound',
        fallback: true,
      },
    });
  });

  it('an upstream refusal of tools is surfaced unchanged', async () => {
    fake.setDeployments([{ name: 'gpt4o-prod', model: 'gpt-4o', script: 'refuse-tools' }]);
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const outcome = await azureAdapter.chat(chatRequest({ raw: { tools } }), target());
    expect(outcome).toMatchObject({
      ok: false,
      failure: { status_code: 400, providerCode: 'OperationNotSupported' },
    });
  });

  it('a model with no mapping fails before any upstream call', async () => {
    const outcome = await azureAdapter.chat(chatRequest(), target({ deployments: { 'gpt-4.1': 'x' } }));
    expect(outcome).toMatchObject({
      ok: false,
      failure: { kind: 'MissingProviderKey', surface: { status: 503, code: 'connection_not_configured' } },
    });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('embeddings and responses translations against the fake', () => {
  const http = azureHttp();
  // The responses call always names the resource host; the fake stands in for it here.
  const onFake = (url: string) => {
    const u = new URL(url);
    return `${fake.url}${u.pathname}${u.search}`;
  };

  it('embeddings: deployment path with api-version, api-key only', async () => {
    const endpoint = azureEndpoint({
      model: 'text-embedding-3-small',
      provider_model_id: 'text-embedding-3-small',
    });
    const creds = azureCredentials(
      { api_version: API_VERSION, deployments: { 'text-embedding-3-small': 'emb' } },
      fake.url,
    );
    const call = deploymentCall(endpoint, creds);
    if (!call.ok) throw new Error('expected a call');
    const r = embeddingsRequest(
      { input: 'vector me', dimensions: 4 },
      call.call,
      endpoint,
      creds.secret,
      'req_e',
    );
    const answer = await http.send('POST', r.url, r.headers, r.body);
    expect(answer).toMatchObject({ ok: true, answer: { status: 200 } });
    expect(fake.requests.at(-1)).toMatchObject({
      path: '/openai/deployments/emb/embeddings',
      query: { 'api-version': API_VERSION },
    });
    expect(fake.violations).toEqual([]);
  });

  it('responses: /openai/v1/responses, no api-version, the deployment as model; unserved is DeploymentNotFound', async () => {
    const creds = azureCredentials({ api_version: API_VERSION }, fake.url);
    const call = deploymentCall(azureEndpoint(), creds);
    if (!call.ok) throw new Error('expected a call');
    const r = responsesRequest(
      { model: 'gpt-4o', input: 'hello responses' },
      call.call,
      creds.secret,
      'req_r',
    );
    const answer = await http.send('POST', onFake(r.url), r.headers, r.body);
    if (!answer.ok) throw new Error(answer.error);
    expect(answer.answer.status).toBe(200);
    expect(fake.requests.at(-1)).toMatchObject({
      path: '/openai/v1/responses',
      query: {},
      body: { model: 'gpt4o-prod' },
    });
    expect(fake.violations).toEqual([]);

    const gone = responsesRequest(
      { input: 'x' },
      { ...call.call, deployment: 'retired' },
      creds.secret,
      'req_r2',
    );
    const missing = await http.send('POST', onFake(gone.url), gone.headers, gone.body);
    expect(missing.ok && missing.answer.status).toBe(404);
    expect(missing.ok && JSON.parse(missing.answer.text).error.code).toBe('DeploymentNotFound');
  });

  it('the fake refuses an api-version on the v1 path and an Authorization header', async () => {
    const a = await http.send(
      'POST',
      `${fake.url}/openai/v1/responses?api-version=${API_VERSION}`,
      {
        'api-key': 'azure-resource-key',
        'content-type': 'application/json',
      },
      '{}',
    );
    expect(a.ok && a.answer.status).toBe(400);
    const b = await http.send(
      'POST',
      `${fake.url}/openai/deployments/gpt4o-prod/chat/completions?api-version=${API_VERSION}`,
      {
        'api-key': 'azure-resource-key',
        authorization: 'Bearer azure-resource-key',
        'content-type': 'application/json',
      },
      '{}',
    );
    expect(b.ok && b.answer.status).toBe(401);
    expect(fake.violations).toHaveLength(2);
  });
});
