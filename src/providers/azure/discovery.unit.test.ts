import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../../../test/fakes/azure-openai.js';
import { ServiceError } from '../../lib/errors.js';
import { configureUpstreams } from '../destinations.js';
import { azureHttp } from './client.js';
import {
  type CredentialRef,
  type DeploymentHostSubject,
  type DiscoveryStore,
  discoverDeployments,
} from './discover.js';
import { classify, planApply, type RegistryFact } from './discovery.js';
import { type ListedDeployment, listDeployments } from './listing.js';

// SPEC 4.6 deployment discovery: listing surfaces and versions, classification, apply planning,
// the zero-deployment refusal and the all-surfaces-failed message.

const KEY = 'azure-resource-key';
let fake: FakeAzure;
const http = azureHttp({ timeoutMs: 2_000 });

beforeAll(async () => {
  // The fake listens on 127.0.0.1 and the tenant's connection points at it (SPEC 4.7 tenant destinations).
  configureUpstreams({ allowPrivateDestinations: true });
  fake = await startFakeAzure({
    apiKey: KEY,
    apiVersion: '2024-10-21',
    projectPath: '/api/projects/p1',
    projectsReportPaths: true,
    deployments: [
      { name: 'gpt4o-prod', model: 'gpt-4o' },
      { name: 'mini', model: 'gpt-4o-mini' },
      { name: 'dalle', model: 'dall-e-3' },
    ],
  });
});
afterAll(() => fake?.close());
beforeEach(() => fake.reset());

const registry: RegistryFact[] = [
  { lane: 'azure', model: 'gpt-4o', provider_model_id: 'gpt-4o', base_url: null },
  { lane: 'azure', model: 'gpt-4o-mini', provider_model_id: 'gpt-4o-mini-2024-07-18', base_url: null },
  { lane: 'azure', model: 'gpt-4o-mini-alias', provider_model_id: 'gpt-4o-mini', base_url: null },
];

const listed = (name: string, model: string | null, ...extra: string[]): ListedDeployment => ({
  name,
  identifiers: [name, ...extra],
  model,
  modelVersion: null,
  status: 'succeeded',
});

describe('listing surfaces', () => {
  it('the projects surface first when project_endpoint is set, with its default version', async () => {
    const r = await listDeployments(
      { origin: fake.url, projectEndpoint: `${fake.url}/api/projects/p1`, secret: KEY },
      http,
    );
    expect(r).toMatchObject({
      ok: true,
      surface: 'projects',
      url: `${fake.url}/api/projects/p1/deployments?api-version=2025-05-01`,
    });
    if (r.ok)
      expect(r.deployments[0]!.identifiers).toContain(
        '/subscriptions/s1/resourceGroups/g1/providers/Microsoft.CognitiveServices/accounts/res/deployments/gpt4o-prod',
      );
    expect(fake.requests.map((q) => q.path)).toEqual(['/api/projects/p1/deployments']);
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('falls back to the data plane with 2023-03-15-preview when the projects surface fails', async () => {
    fake.failListing('projects', 403);
    const r = await listDeployments(
      { origin: fake.url, projectEndpoint: `${fake.url}/api/projects/p1`, secret: KEY },
      http,
    );
    expect(r).toMatchObject({
      ok: true,
      surface: 'data-plane',
      url: `${fake.url}/openai/deployments?api-version=2023-03-15-preview`,
    });
    if (r.ok)
      expect(r.deployments.map((d) => [d.name, d.model])).toEqual([
        ['gpt4o-prod', 'gpt-4o'],
        ['mini', 'gpt-4o-mini'],
        ['dalle', 'dall-e-3'],
      ]);
  });

  it('discovery_api_version overrides both listing versions', async () => {
    await listDeployments(
      {
        origin: fake.url,
        projectEndpoint: `${fake.url}/api/projects/p1`,
        discoveryApiVersion: '2099-01-01',
        secret: KEY,
      },
      http,
    );
    expect(fake.requests.map((q) => q.query['api-version'])).toEqual(['2099-01-01', '2099-01-01']);
  });

  it('when no surface answers, the message names every URL tried and what each returned', async () => {
    fake.failListing('projects', 401);
    fake.failListing('data-plane', 500);
    const r = await listDeployments(
      { origin: fake.url, projectEndpoint: `${fake.url}/api/projects/p1`, secret: KEY },
      http,
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.message).toContain(
      `GET ${fake.url}/api/projects/p1/deployments?api-version=2025-05-01 -> HTTP 401`,
    );
    expect(r.message).toContain(
      `GET ${fake.url}/openai/deployments?api-version=2023-03-15-preview -> HTTP 500`,
    );
    const unreachable = await listDeployments({ origin: 'http://127.0.0.1:1', secret: KEY }, http);
    expect(!unreachable.ok && unreachable.message).toMatch(
      /GET http:\/\/127\.0\.0\.1:1\/openai\/deployments\?api-version=2023-03-15-preview -> no answer \(ECONNREFUSED\)/,
    );
  });
});

describe('classification', () => {
  it('mapped under any reported identifier, mappable by provider model id or canonical id, else unsupported', () => {
    const deployments = [
      listed('a', 'gpt-4o', '/subs/x/deployments/a'),
      listed('b', 'gpt-4o-mini'),
      listed('c', 'gpt-4o-mini-2024-07-18'),
      listed('d', 'whisper'),
      listed('e', null),
    ];
    const out = classify(deployments, { 'gpt-4o': '/subs/x/deployments/a' }, registry);
    expect(out.map((d) => [d.name, d.classification, d.models])).toEqual([
      ['a', 'mapped', ['gpt-4o']],
      ['b', 'mappable', ['gpt-4o-mini', 'gpt-4o-mini-alias']],
      ['c', 'mappable', ['gpt-4o-mini']],
      ['d', 'unsupported', []],
      ['e', 'unsupported', []],
    ]);
  });
});

describe('apply planning', () => {
  it('merges mappable deployments, prunes gone ones, rewrites path mappings to short names', () => {
    const deployments = [listed('a', 'gpt-4o', '/subs/x/deployments/a'), listed('b', 'gpt-4o-mini')];
    const mappings = { 'gpt-4o': '/subs/x/deployments/a', 'o3-mini': 'gone', 'gpt-4o-mini-alias': 'b' };
    const plan = planApply(deployments, classify(deployments, mappings, registry), mappings);
    // b is mapped already, so it is not mappable: apply adds nothing for it.
    expect(plan.deployments).toEqual({ 'gpt-4o': 'a', 'gpt-4o-mini-alias': 'b' });
    expect(plan.pruned).toEqual([{ model: 'o3-mini', deployment: 'gone' }]);
    expect(plan.rewritten).toEqual([{ model: 'gpt-4o', from: '/subs/x/deployments/a', to: 'a' }]);
    expect(plan.added).toEqual([]);
    expect(plan.kept).toBe(1);
  });

  it('an existing mapping is never overwritten; the first mappable deployment by name fills a model', () => {
    const deployments = [listed('z-mini', 'gpt-4o-mini'), listed('a-mini', 'gpt-4o-mini')];
    const plan = planApply(deployments, classify(deployments, {}, registry), {});
    expect(plan.deployments).toEqual({ 'gpt-4o-mini': 'a-mini', 'gpt-4o-mini-alias': 'a-mini' });
  });
});

describe('discoverDeployments', () => {
  const storeWith = (metadata: Record<string, unknown>, provider = 'azure') => {
    const applied: { deployments: Record<string, string>; counts: unknown }[] = [];
    const store: DiscoveryStore = {
      deploymentHostSubject: async (_ref: CredentialRef): Promise<DeploymentHostSubject> => ({
        provider,
        secret: KEY,
        baseUrl: fake.url,
        metadata: { resource: 'res', api_version: '2024-10-21', ...metadata },
        endpoints: registry,
      }),
      applyDiscovery: async (_actor, _ref, deployments, counts) => {
        applied.push({ deployments, counts });
      },
    };
    return { store, applied };
  };
  const run = (store: DiscoveryStore, apply: boolean) =>
    discoverDeployments(store, { id: 'test' }, { connectionId: 'conn_1' }, { apply, http });

  it('report-only lists and classifies without storing; apply stores the plan with counts', async () => {
    const { store, applied } = storeWith({ deployments: { 'gpt-4o': 'gpt4o-prod', o1: 'retired' } });
    const report = await run(store, false);
    expect(report.deployments.map((d) => [d.name, d.classification])).toEqual([
      ['dalle', 'unsupported'],
      ['gpt4o-prod', 'mapped'],
      ['mini', 'mappable'],
    ]);
    expect(report.counts).toEqual({
      listed: 3,
      mapped: 1,
      mappable: 1,
      unsupported: 1,
      added: 2,
      pruned: 1,
      rewritten: 0,
      kept: 1,
    });
    expect(report.applied).toBe(false);
    expect(applied).toHaveLength(0);

    const done = await run(store, true);
    expect(done.applied).toBe(true);
    expect(applied[0]!.deployments).toEqual({
      'gpt-4o': 'gpt4o-prod',
      'gpt-4o-mini': 'mini',
      'gpt-4o-mini-alias': 'mini',
    });
    expect(applied[0]!.counts).toMatchObject({ added: 2, pruned: 1 });
  });

  it('a listing of zero deployments is refused in apply mode when mappings exist, applied when none do', async () => {
    fake.setDeployments([]);
    const withMappings = storeWith({ deployments: { 'gpt-4o': 'gpt4o-prod' } });
    const refused = await run(withMappings.store, true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).code).toBe('conflict');
    expect((refused as ServiceError).message).toContain('returned no deployments');
    expect(withMappings.applied).toHaveLength(0);
    expect((await run(withMappings.store, false)).counts.pruned).toBe(1);

    const empty = storeWith({});
    await run(empty.store, true);
    expect(empty.applied).toEqual([{ deployments: {}, counts: expect.objectContaining({ listed: 0 }) }]);
  });

  it('all surfaces failing is an upstream_error naming each URL', async () => {
    fake.failListing('data-plane', 503);
    const err = (await run(storeWith({}).store, false).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe('upstream_error');
    expect(err.message).toContain(
      `${fake.url}/openai/deployments?api-version=2023-03-15-preview -> HTTP 503`,
    );
  });

  it('refuses a credential that is not a deployment host', async () => {
    const err = (await run(storeWith({}, 'openai').store, false).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe('bad_request');
  });
});
