import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import type { CommandContext } from '../../commands/decider.js';
import { readArtifact } from '../../commands/registry/artifact.js';
import { formatRefusal } from '../../commands/registry/csv.js';
import type { Artifact } from '../../commands/registry/events.js';
import { approveRateCards, importArtifact, upsertEndpoint } from '../../commands/registry/handler.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { RegistrySnapshotCache } from '../../gateway/registry/cache.js';
import type { RegistrySnapshot } from '../../gateway/registry/snapshot.js';
import { ServiceError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Adapter } from '../../providers/endpoint.js';
import { ProjectionRunner, rebuildProjection } from '../runner.js';
import { registryProjection } from './projection.js';
import { listEndpoints, sharedFactsFrom } from './queries.js';

// Import handler -> event store -> registry projection -> gateway snapshot,
// which sees each change within 1 s.

const fixture = (name: string) =>
  readFileSync(new URL(`../../../test/fixtures/registry/${name}`, import.meta.url), 'utf8');

const artifact = (catalog: string, rates: string): Artifact => {
  const r = readArtifact({
    catalogFile: catalog,
    catalogText: fixture(catalog),
    ratesFile: rates,
    ratesText: fixture(rates),
  });
  if (!r.ok) throw new Error(formatRefusal(r.refusal));
  return r.value;
};

const ctx = (): CommandContext => ({
  commandId: newId('cmd'),
  actor: 'operator:test',
  now: new Date().toISOString(),
});

let db: TestDatabase;
let store: PostgresEventStore;
let runner: ProjectionRunner;
let cache: RegistrySnapshotCache;

const runImport = (lane: string, adapter: Adapter, a: Artifact) =>
  importArtifact(store, sharedFactsFrom(db.pool), { lane, adapter, artifact: a, skipUnpriced: false }, ctx());

/** Waits for the gateway's snapshot to satisfy `check`, failing after `withinMs`. */
const snapshotWhere = async (check: (s: RegistrySnapshot) => boolean, withinMs = 1_000) => {
  const started = Date.now();
  for (;;) {
    if (check(cache.current())) return Date.now() - started;
    if (Date.now() - started > withinMs) throw new Error(`snapshot did not change within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  runner = new ProjectionRunner(db.pool, db.url, [registryProjection]);
  runner.start();
  cache = new RegistrySnapshotCache(db.pool, db.url);
  await cache.start();
});
afterAll(async () => {
  await cache?.stop();
  await runner?.stop();
  await store?.close();
  await db?.drop();
});

describe('registry import through the read model to the gateway snapshot', () => {
  it('imports an artifact and the snapshot routes it within 1 s', async () => {
    const r = await runImport('openai', 'openai', artifact('openai.catalog.csv', 'openai.rates.csv'));
    expect(r.summary).toMatchObject({ endpoints_added: 5, cards_activated: 4 });
    const elapsed = await snapshotWhere((s) => s.candidates('gpt-4o').length === 1);
    expect(elapsed).toBeLessThan(1_000);

    const snap = cache.current();
    const gpt4o = snap.candidates('openai/gpt-4o')[0]!;
    expect(gpt4o).toMatchObject({
      provider_model_id: 'gpt-4o-2024-08-06',
      context_length: 128000,
      base_url: null,
    });
    expect(snap.cardAt(gpt4o)?.tiers.get('standard')?.output_token.text?.get('')?.[0]?.priceText).toBe(
      '0.00001',
    );
    // Disabled and unpriced endpoints are known but not routable.
    expect(snap.find('openai', 'gpt-3.5-turbo')).toBeDefined();
    expect(snap.candidates('gpt-3.5-turbo')).toEqual([]);
    expect(snap.routable().map((e) => e.model)).toEqual([
      'gpt-4o',
      'gpt-4o-mini',
      'o3',
      'text-embedding-3-small',
    ]);
  });

  it('re-applying the same artifact writes zero events', async () => {
    const head = await store.headPosition();
    const r = await runImport('openai', 'openai', artifact('openai.catalog.csv', 'openai.rates.csv'));
    expect(r.events).toEqual([]);
    expect(r.summary).toMatchObject({ endpoints_unchanged: 5, endpoints_added: 0, cards_activated: 0 });
    expect(await store.headPosition()).toBe(head);
  });

  it('a re-import without o3 retires it, and corrected prices wait for approval', async () => {
    await runImport('openai', 'openai', artifact('openai-v2.catalog.csv', 'openai-v2.rates.csv'));
    await snapshotWhere((s) => s.candidates('o3').length === 0);
    expect(cache.current().find('openai', 'o3')?.retired).toBe(true);
    await runner.waitForHead();
    const listed = await listEndpoints(db.pool, 'openai');
    expect(listed.find((e) => e.model === 'gpt-4o')).toMatchObject({ revision: 2, needs_approval: true });
    // The corrected card prices from now on (SPEC: it is activated), flagged until approved.
    const gpt4o = cache.current().byModel('gpt-4o')[0]!;
    expect(cache.current().cardAt(gpt4o)?.revision).toBe(2);

    const approved = await approveRateCards(store, { lane: 'openai', model: 'gpt-4o' }, ctx());
    expect(approved.events).toHaveLength(1);
    await runner.waitForHead();
    const { rows } = await db.pool.query(
      'SELECT needs_approval, approved_by FROM rm_registry_rate_cards WHERE card_id = $1',
      ['openai/gpt-4o#2'],
    );
    expect(rows).toEqual([{ needs_approval: false, approved_by: 'operator:test' }]);
  });

  it('refuses another lane changing the modalities of a shared model, and accepts agreeing facts', async () => {
    await runner.waitForHead();
    const refused = await runImport(
      'azure',
      'azure',
      artifact('azure-text-only.catalog.csv', 'azure.rates.csv'),
    ).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).code).toBe('shared_model_capability_change');

    await runImport('azure', 'azure', artifact('azure.catalog.csv', 'azure.rates.csv'));
    await snapshotWhere((s) => s.candidates('gpt-4o').length === 2);
    expect(cache.current().candidates('azure/gpt-4o')[0]?.base_url).toBe('https://myres.openai.azure.com');
  });

  it('an operator upsert is pinned, survives a re-import, and rebuilds identically by replay', async () => {
    await upsertEndpoint(
      store,
      sharedFactsFrom(db.pool),
      {
        lane: 'openai',
        adapter: 'openai',
        endpoint: {
          ...cache.current().find('openai', 'gpt-4o-mini')!,
          model: 'house-model',
          provider_model_id: 'house-v1',
        },
        inputPricePerToken: '0.000001',
        outputPricePerToken: '0.000004',
      },
      ctx(),
    );
    await snapshotWhere((s) => s.candidates('house-model').length === 1);
    await runImport('openai', 'openai', artifact('openai.catalog.csv', 'openai.rates.csv'));
    await runner.waitForHead();
    const house = (await listEndpoints(db.pool, 'openai')).find((e) => e.model === 'house-model');
    expect(house).toMatchObject({ managed_by: 'operator', pricing_pinned: true, retired: false });

    const before = await db.pool.query('SELECT * FROM rm_registry_endpoints ORDER BY lane, model');
    await rebuildProjection(db.pool, registryProjection);
    const after = await db.pool.query('SELECT * FROM rm_registry_endpoints ORDER BY lane, model');
    expect(after.rows).toEqual(before.rows);
    const imports = await db.pool.query('SELECT lane, digest FROM rm_registry_imports ORDER BY position');
    expect(imports.rows.map((r) => r.lane)).toEqual(['openai', 'openai', 'azure', 'openai']);
  });

  it('a rebuild and a reader that holds one read-model table while it reads the next do not deadlock', async () => {
    // The gateway's snapshot load reads endpoints, then rate cards, in one transaction. A rebuild
    // that locked the tables exclusively one by one met it the other way round.
    const reader = await db.pool.connect();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await reader.query('SELECT count(*) FROM rm_registry_endpoints');
      const rebuilt = rebuildProjection(db.pool, registryProjection);
      await new Promise((r) => setTimeout(r, 200));
      await reader.query('SELECT count(*) FROM rm_registry_rate_cards');
      await reader.query('SELECT count(*) FROM rm_registry_rate_rows');
      await reader.query('COMMIT');
      await expect(rebuilt).resolves.toMatchObject({ events: expect.any(Number) });
    } finally {
      reader.release();
    }
  });
});
