import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeAzure, startFakeAzure } from '../../../test/fakes/azure-openai.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { connectionStream, platformKeyStream } from '../../commands/connections/decider.js';
import { upsertEndpoint } from '../../commands/registry/handler.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { ServiceError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { auditRecordOf } from '../../projections/audit-relay/audit-record.js';
import { catchUpRegistry, sharedFactsFrom } from '../../projections/registry/queries.js';
import { type ControlPlane, makeControlPlane } from '../../roles/control-plane.js';
import { configureUpstreams } from '../destinations.js';
import type { EndpointFacts } from '../endpoint.js';
import { azureHttp } from './client.js';
import { discoverDeployments } from './discover.js';

// SPEC 4.6 discovery apply through the control plane on a real database: the merged map reaches
// the read model, the audit record carries counts only, and a zero listing never wipes mappings.

const KEY = 'azure-resource-key';
const PATH_ID =
  '/subscriptions/s1/resourceGroups/g1/providers/Microsoft.CognitiveServices/accounts/res/deployments/gpt4o-prod';
const actor = { id: 'test' };
const http = azureHttp({ timeoutMs: 2_000 });

let db: TestDatabase;
let store: PostgresEventStore;
let cp: ControlPlane;
let fake: FakeAzure;
let projectId: string;

const facts = (model: string, providerModelId: string): EndpointFacts => ({
  model,
  provider_model_id: providerModelId,
  base_url: null,
  display_name: model,
  family: model,
  release_date: null,
  description: '',
  capabilities: {
    chat: true,
    embeddings: false,
    responses: false,
    images: false,
    moderations: false,
    tools: true,
    streaming: true,
    reasoning: false,
  },
  input_modalities: ['text'],
  output_modalities: ['text'],
  context_length: 128_000,
  max_output_tokens: null,
  enabled: true,
});

const upsert = (model: string, providerModelId: string) =>
  upsertEndpoint(
    store,
    sharedFactsFrom(db.pool),
    {
      lane: 'azure',
      adapter: 'azure',
      endpoint: facts(model, providerModelId),
      inputPricePerToken: '0.0000025',
      outputPricePerToken: '0.00001',
    },
    { commandId: newId('cmd'), actor: 'operator:test', now: new Date().toISOString() },
  );

const DEPLOYMENTS = [
  { name: 'gpt4o-prod', model: 'gpt-4o' },
  { name: 'mini', model: 'gpt-4o-mini' },
  { name: 'whisper', model: 'whisper' },
];

beforeAll(async () => {
  // The fake listens on 127.0.0.1 and the tenant's connection points at it (SPEC 4.7 tenant destinations).
  configureUpstreams({ allowPrivateDestinations: true });
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  cp = makeControlPlane(store, db.pool, randomBytes(32), undefined, { allowPrivateDestinations: true });
  fake = await startFakeAzure({
    apiKey: KEY,
    apiVersion: '2024-10-21',
    projectPath: '/api/projects/p1',
    projectsReportPaths: true,
    deployments: DEPLOYMENTS,
  });
  const ws = await cp.createWorkspace(actor, 'Discovery');
  const org = await cp.createOrganization(actor, ws.workspace_id, 'Org');
  projectId = (await cp.createProject(actor, org.org_id, 'Project')).project_id;
  await upsert('gpt-4o', 'gpt-4o');
  await upsert('gpt-4o-mini', 'gpt-4o-mini');
  await catchUpRegistry(db.pool);
});
afterAll(async () => {
  await fake?.close();
  await store?.close();
  await db?.drop();
});
beforeEach(() => fake.reset());

const createConnection = (name: string, deployments: Record<string, string>) =>
  cp.createConnection(actor, {
    projectId,
    provider: 'azure',
    name,
    secret: KEY,
    baseUrl: fake.url,
    metadata: {
      resource: 'res',
      api_version: '2024-10-21',
      deployments,
      project_endpoint: `${fake.url}/api/projects/p1`,
    },
  });

describe('discovery apply on a tenant connection', () => {
  it('merges, prunes and rewrites; the read model shows it; the audit record has counts only', async () => {
    const conn = await createConnection('primary', { 'gpt-4o': PATH_ID, o1: 'retired-deployment' });
    const report = await discoverDeployments(cp, actor, { connectionId: conn.id }, { apply: true, http });
    expect(report.surface).toBe('projects');
    expect(report.deployments.map((d) => [d.name, d.classification])).toEqual([
      ['gpt4o-prod', 'mapped'],
      ['mini', 'mappable'],
      ['whisper', 'unsupported'],
    ]);
    expect(report.counts).toMatchObject({ added: 1, pruned: 1, rewritten: 1, kept: 0 });

    const stored = await cp.reads.requireConnection(conn.id);
    expect(stored.metadata).toMatchObject({ deployments: { 'gpt-4o': 'gpt4o-prod', 'gpt-4o-mini': 'mini' } });

    const { events } = await store.readStream(connectionStream(conn.id));
    const audit = auditRecordOf(events.at(-1)!);
    expect(audit.action).toBe('connection.discovery_applied');
    expect(audit.target).toEqual({ type: 'connection', id: conn.id });
    expect(audit.details).toEqual({
      listed: 3,
      mapped: 1,
      mappable: 1,
      unsupported: 1,
      added: 1,
      pruned: 1,
      rewritten: 1,
      kept: 0,
    });
    expect(JSON.stringify(audit)).not.toContain('gpt4o-prod');
    expect(JSON.stringify(audit)).not.toContain(KEY);
  });

  it('a zero-deployment listing is refused in apply mode and the mappings stay', async () => {
    const conn = await createConnection('zero', { 'gpt-4o': 'gpt4o-prod' });
    fake.setDeployments([]);
    const err = await discoverDeployments(cp, actor, { connectionId: conn.id }, { apply: true, http }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('conflict');
    expect((await cp.reads.requireConnection(conn.id)).metadata).toMatchObject({
      deployments: { 'gpt-4o': 'gpt4o-prod' },
    });
    const { events } = await store.readStream(connectionStream(conn.id));
    expect(events.map((e) => e.type)).toEqual(['ConnectionCreated']);
  });

  it('all surfaces failing names each URL and changes nothing', async () => {
    const conn = await createConnection('unreachable', {});
    fake.failListing('projects', 401);
    fake.failListing('data-plane', 404);
    const err = (await discoverDeployments(cp, actor, { connectionId: conn.id }, { apply: true, http }).catch(
      (e: unknown) => e,
    )) as ServiceError;
    expect(err.message).toContain(
      `${fake.url}/api/projects/p1/deployments?api-version=2025-05-01 -> HTTP 401`,
    );
    expect(err.message).toContain(
      `${fake.url}/openai/deployments?api-version=2023-03-15-preview -> HTTP 404`,
    );
  });
});

describe('discovery apply on a platform key', () => {
  it('re-sets the key with its own ciphertext and the merged map; audited as discovery_applied', async () => {
    await cp.setPlatformKey(actor, {
      provider: 'azure',
      secret: KEY,
      baseUrl: fake.url,
      metadata: { resource: 'res', api_version: '2024-10-21' },
    });
    const report = await discoverDeployments(cp, actor, { platform: 'azure' }, { apply: true, http });
    expect(report.surface).toBe('data-plane');
    const key = (await cp.reads.platformKeys()).find((k) => k.provider === 'azure');
    expect(key?.metadata).toMatchObject({ deployments: { 'gpt-4o': 'gpt4o-prod', 'gpt-4o-mini': 'mini' } });
    // The secret still decrypts: a second run lists with it.
    expect(
      (await discoverDeployments(cp, actor, { platform: 'azure' }, { apply: false, http })).counts.mapped,
    ).toBe(2);
    const { events } = await store.readStream(platformKeyStream('azure'));
    const audit = auditRecordOf(events.at(-1)!);
    expect(audit).toMatchObject({
      action: 'connection.discovery_applied',
      target: { type: 'platform_key', id: 'azure' },
    });
    expect(Object.keys(audit.details).sort()).toEqual([
      'added',
      'kept',
      'listed',
      'mappable',
      'mapped',
      'pruned',
      'rewritten',
      'unsupported',
    ]);
  });

  it('an unknown platform key is not_found', async () => {
    const err = (await discoverDeployments(
      cp,
      actor,
      { platform: 'azure-gov' },
      { apply: false, http },
    ).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe('not_found');
  });
});
