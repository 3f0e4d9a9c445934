import { describe, expect, it } from 'vitest';
import { azureCredentials, azureEndpoint } from '../../../test/fixtures/azure/azure.fixtures.js';
import { deploymentFor, resolveOrigin, shortDeploymentName } from './origin.js';
import {
  chatUrl,
  deploymentCall,
  embeddingsRequest,
  embeddingsUrl,
  responsesRequest,
  responsesUrl,
} from './requests.js';

// SPEC 4.7 deployment-host request forms and origin resolution; SPEC 2.7 metadata; SPEC 9.3.

const metadata = { resource: 'myres', api_version: '2024-10-21', deployments: {} };

describe('URL forms', () => {
  it('chat and embeddings address the deployment with the api-version query', () => {
    expect(chatUrl('https://myres.openai.azure.com', 'gpt4o-prod', '2024-10-21')).toBe(
      'https://myres.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21',
    );
    expect(embeddingsUrl('http://127.0.0.1:9', 'emb small', '2024-06-01')).toBe(
      'http://127.0.0.1:9/openai/deployments/emb%20small/embeddings?api-version=2024-06-01',
    );
  });

  it('responses go to the resource host v1 surface: no api-version, no deployment segment', () => {
    expect(responsesUrl(metadata, 'azure')).toBe('https://myres.openai.azure.com/openai/v1/responses');
    expect(responsesUrl(metadata, 'azure-gov')).toBe('https://myres.openai.azure.us/openai/v1/responses');
    expect(responsesUrl({ ...metadata, domain: 'cognitiveservices.azure.com' }, 'azure')).toBe(
      'https://myres.cognitiveservices.azure.com/openai/v1/responses',
    );
  });

  it('responses send the mapped deployment as model, even under a custom data-plane origin', () => {
    const endpoint = azureEndpoint();
    const prepared = deploymentCall(endpoint, azureCredentials({}, 'http://127.0.0.1:1234'));
    if (!prepared.ok) throw new Error('expected a call');
    const r = responsesRequest({ model: 'gpt-4o', input: 'hi' }, prepared.call, 'k', 'req_1');
    expect(r.url).toBe('https://myres.openai.azure.com/openai/v1/responses');
    expect(JSON.parse(r.body)).toEqual({ model: 'gpt4o-prod', input: 'hi' });
    expect(r.headers['api-key']).toBe('k');
    expect(r.headers.authorization).toBeUndefined();
  });

  it('embeddings go to the deployment path and echo the catalog model name', () => {
    const endpoint = azureEndpoint({
      model: 'text-embedding-3-small',
      provider_model_id: 'text-embedding-3-small',
    });
    const creds = azureCredentials({ deployments: { 'text-embedding-3-small': 'emb' } });
    const prepared = deploymentCall(endpoint, creds);
    if (!prepared.ok) throw new Error('expected a call');
    const r = embeddingsRequest(
      { model: 'text-embedding-3-small', input: 'x' },
      prepared.call,
      endpoint,
      'k',
      'req_1',
    );
    expect(r.url).toBe(
      'https://myres.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21',
    );
    expect(JSON.parse(r.body).model).toBe('text-embedding-3-small');
  });
});

describe('origin resolution, first usable wins', () => {
  const resolve = (
    connectionBaseUrl: string | null,
    laneBaseUrl: string | null,
    adapter: 'azure' | 'azure-gov' = 'azure',
  ) => resolveOrigin({ connectionBaseUrl, laneBaseUrl, metadata, adapter });

  it('the connection base_url, then the lane catalog base_url, then https://{resource}.{domain}', () => {
    expect(resolve('https://proxy.example.com', 'https://lane.example.com')).toEqual({
      ok: true,
      origin: 'https://proxy.example.com',
      source: 'connection',
    });
    expect(resolve(null, 'https://lane.example.com')).toMatchObject({
      origin: 'https://lane.example.com',
      source: 'lane',
    });
    expect(resolve(null, null)).toMatchObject({
      origin: 'https://myres.openai.azure.com',
      source: 'derived',
    });
    expect(resolve(null, null, 'azure-gov')).toMatchObject({ origin: 'https://myres.openai.azure.us' });
  });

  it('the catalog placeholder https://unused.invalid means none', () => {
    expect(resolve(null, 'https://unused.invalid')).toMatchObject({ source: 'derived' });
  });

  it('a candidate with a path, query or fragment, or plain HTTP off loopback, is not usable', () => {
    expect(resolve(null, 'https://lane.example.com/openai')).toMatchObject({ source: 'derived' });
    expect(resolve(null, 'https://lane.example.com?x=1')).toMatchObject({ source: 'derived' });
    expect(resolve(null, 'http://lane.example.com')).toMatchObject({ source: 'derived' });
    expect(resolve('http://127.0.0.1:8443', null)).toMatchObject({
      origin: 'http://127.0.0.1:8443',
      source: 'connection',
    });
    expect(resolve('http://localhost:8443', null)).toMatchObject({ source: 'connection' });
  });

  it('a domain override replaces the lane default', () => {
    expect(
      resolveOrigin({
        connectionBaseUrl: null,
        laneBaseUrl: null,
        metadata: { ...metadata, domain: 'openai.azure.cn' },
        adapter: 'azure',
      }),
    ).toMatchObject({ origin: 'https://myres.openai.azure.cn' });
  });
});

describe('deployment mapping', () => {
  const md = (deployments: Record<string, string>) => ({ ...metadata, deployments });

  it('by canonical model id, else by the provider model id; a path mapping dials its short name', () => {
    const e = azureEndpoint({ model: 'gpt-4o', provider_model_id: 'gpt-4o-2024-08-06' });
    expect(deploymentFor(md({ 'gpt-4o': 'a' }), e)).toBe('a');
    expect(deploymentFor(md({ 'gpt-4o-2024-08-06': 'b' }), e)).toBe('b');
    expect(
      deploymentFor(
        md({ 'gpt-4o': '/subscriptions/s/resourceGroups/g/providers/x/accounts/r/deployments/c' }),
        e,
      ),
    ).toBe('c');
    expect(deploymentFor(md({ 'gpt-4.1': 'd' }), e)).toBeUndefined();
    expect(shortDeploymentName('plain')).toBe('plain');
  });

  it('no mapping: connection_not_configured (503) before any upstream call, eligible for fallback', () => {
    const r = deploymentCall(
      azureEndpoint({ model: 'gpt-4.1', provider_model_id: 'gpt-4.1' }),
      azureCredentials(),
    );
    expect(r).toMatchObject({
      ok: false,
      failure: {
        kind: 'MissingProviderKey',
        retryable: false,
        fallback: true,
        surface: { status: 503, code: 'connection_not_configured' },
      },
    });
    if (!r.ok) expect(r.failure.message).toContain('gpt-4.1');
  });

  it('unusable metadata also fails as connection_not_configured, naming the field', () => {
    const r = deploymentCall(azureEndpoint(), azureCredentials({ api_version: undefined }));
    expect(r).toMatchObject({ ok: false, failure: { surface: { code: 'connection_not_configured' } } });
    if (!r.ok) expect(r.failure.message).toContain('metadata.api_version');
  });
});
