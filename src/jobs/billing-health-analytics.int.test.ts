import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../analytics/chdb/store.js';
import { migrateClickHouse } from '../analytics/migrate.js';
import { analyticsOutcomeSource } from './billing-health.js';

// The evaluator's input: served requests by lane and model, priced or failed, from the request
// rows ingest writes (FINAL: a redelivered row counts once).

let dir: string;
let store: ChdbAnalyticsStore;

const row = (id: string, model: string, billing: 'priced' | 'failed', at: string, status = 'success') => ({
  request_id: id,
  org_id: 'org_1',
  started_at: at,
  finished_at: at,
  provider: 'openai',
  model_served: model,
  status,
  billing_status: billing,
  ingested_at: at,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-bh-'));
  store = await ChdbAnalyticsStore.open({ path: dir, database: 'bh', createDatabase: true });
  await migrateClickHouse(store);
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('analytics outcome source', () => {
  it('counts served requests per endpoint since the window start, each request once', async () => {
    const now = Date.parse('2026-11-22T06:00:00.000Z');
    const inWindow = new Date(now - 10 * 60_000).toISOString();
    const before = new Date(now - 120 * 60_000).toISOString();
    await store.insert('requests', [
      row('r1', 'flaky', 'failed', inWindow),
      row('r1', 'flaky', 'failed', inWindow), // redelivered copy
      row('r2', 'flaky', 'priced', inWindow),
      row('r3', 'flaky', 'failed', before), // outside the window
      row('r4', 'flaky', 'priced', inWindow, 'error'), // not served
      row('r5', 'steady', 'priced', inWindow),
    ]);
    const outcomes = await analyticsOutcomeSource(store)(now - 60 * 60_000);
    const byModel = Object.fromEntries(outcomes.map((o) => [o.model, o]));
    expect(byModel.flaky).toEqual({ lane: 'openai', model: 'flaky', priced: 1, failed: 1 });
    expect(byModel.steady).toEqual({ lane: 'openai', model: 'steady', priced: 1, failed: 0 });
  });
});
