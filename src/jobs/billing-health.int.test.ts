import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { runSvc } from '../../test/helpers/svc-process.js';
import { upsertEndpoint } from '../commands/registry/handler.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import { loadRegistrySnapshot } from '../gateway/registry/load.js';
import { catchUpRegistry, sharedFactsFrom } from '../projections/registry/queries.js';
import { type BillingHealthThresholds, type EndpointOutcomes, runBillingHealth } from './billing-health.js';

// SPEC 3: an endpoint whose billing failures reach both thresholds leaves rotation
// for every tenant; `svc models unquarantine` restores it; action=allow quarantines nothing.

let db: TestDatabase;
let store: PostgresEventStore;
const defaults: BillingHealthThresholds = {
  minFailures: 10,
  minRatioBps: 100,
  action: 'quarantine',
  windowMinutes: 60,
};
const ctx = (n: string) => ({
  commandId: `cmd-${n}-${Math.random()}`,
  actor: 'test',
  now: new Date().toISOString(),
});

const endpoint = (model: string) => ({
  model,
  provider_model_id: model,
  base_url: null,
  display_name: model,
  family: 'test',
  release_date: null,
  description: '',
  capabilities: {
    chat: true,
    embeddings: false,
    responses: false,
    images: false,
    moderations: false,
    tools: false,
    streaming: true,
    reasoning: false,
  },
  input_modalities: ['text' as const],
  output_modalities: ['text' as const],
  context_length: 8_000,
  max_output_tokens: 1_000,
  enabled: true,
});

const routable = async (model: string) => {
  await catchUpRegistry(db.pool);
  return (await loadRegistrySnapshot(db.pool)).candidates(model).length > 0;
};

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  for (const model of ['flaky', 'steady']) {
    await upsertEndpoint(
      store,
      sharedFactsFrom(db.pool),
      {
        lane: 'openai',
        adapter: 'openai',
        endpoint: endpoint(model),
        inputPricePerToken: '0.000001',
        outputPricePerToken: '0.000002',
      },
      ctx(model),
    );
  }
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('billing-health quarantine', () => {
  const outcomes: EndpointOutcomes[] = [
    { lane: 'openai', model: 'flaky', failed: 10, priced: 990 },
    { lane: 'openai', model: 'steady', failed: 9, priced: 10 },
  ];
  const source = async () => outcomes;

  it('with action=allow nothing leaves rotation', async () => {
    const hit = await runBillingHealth({
      store,
      source,
      thresholds: { ...defaults, action: 'allow' },
      now: new Date(),
    });
    expect(hit).toEqual([]);
    expect(await routable('flaky')).toBe(true);
  });

  it('at the defaults (10 failures and 1%) the breaching endpoint is quarantined for every tenant', async () => {
    const hit = await runBillingHealth({ store, source, thresholds: defaults, now: new Date() });
    expect(hit.map((o) => o.model)).toEqual(['flaky']);
    expect(await routable('flaky')).toBe(false);
    expect(await routable('steady')).toBe(true);
    // A second run changes nothing; a re-upsert of the endpoint does not lift the quarantine.
    await runBillingHealth({ store, source, thresholds: defaults, now: new Date() });
    await upsertEndpoint(
      store,
      sharedFactsFrom(db.pool),
      {
        lane: 'openai',
        adapter: 'openai',
        endpoint: { ...endpoint('flaky'), display_name: 'Flaky v2' },
        inputPricePerToken: '0.000001',
        outputPricePerToken: '0.000002',
      },
      ctx('re'),
    );
    expect(await routable('flaky')).toBe(false);
  });

  it('svc models unquarantine returns it to rotation', async () => {
    const r = await runSvc(['models', 'unquarantine', '--lane', 'openai', '--model', 'flaky', '--json'], {
      SVC_DATABASE_URL: db.url,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ quarantined: false, changed: true });
    expect(await routable('flaky')).toBe(true);
    const again = await runSvc(['models', 'unquarantine', '--lane', 'openai', '--model', 'flaky'], {
      SVC_DATABASE_URL: db.url,
    });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('not quarantined');
  });
});
