import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../analytics/chdb/store.js';
import { parseUsd } from '../lib/money.js';
import { compareWithAnalytics } from './wallet-costs.js';

// `svc ledger replay`'s analytics half on the embedded ClickHouse engine: ledger charges against
// the cost lines of the same requests, found by the table's shape.

let dir: string;
let store: ChdbAnalyticsStore;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-wallet-chdb-'));
  store = await ChdbAnalyticsStore.open({ path: dir, database: 'wallet_costs', createDatabase: true });
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('analytics comparison', () => {
  it('skips with a note while no cost-line table exists', async () => {
    const r = await compareWithAnalytics(store, 'ws_a', new Map());
    expect(r).toMatchObject({ status: 'skipped', note: expect.stringMatching(/no cost-line table/) });
    expect(await compareWithAnalytics(null, 'ws_a', new Map())).toMatchObject({ status: 'skipped' });
  });

  it('reports a priced charge whose cost lines are missing or sum differently, exactly', async () => {
    await store.command(
      `CREATE TABLE request_cost_lines (request_id String, line_index UInt16, workspace_id String,
         amount Decimal(38, 18), ingested_at DateTime64(3, 'UTC'))
       ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (workspace_id, request_id, line_index)`,
    );
    const at = '2026-01-01T00:00:00.000Z';
    await store.insert('request_cost_lines', [
      {
        request_id: 'req_ok',
        line_index: 0,
        workspace_id: 'ws_a',
        amount: '0.000000000000000001',
        ingested_at: at,
      },
      { request_id: 'req_ok', line_index: 1, workspace_id: 'ws_a', amount: '1.5', ingested_at: at },
      // A redelivered line: FINAL keeps one.
      { request_id: 'req_ok', line_index: 1, workspace_id: 'ws_a', amount: '1.5', ingested_at: at },
      { request_id: 'req_off', line_index: 0, workspace_id: 'ws_a', amount: '2', ingested_at: at },
      { request_id: 'req_other_ws', line_index: 0, workspace_id: 'ws_b', amount: '9', ingested_at: at },
    ]);
    const charges = new Map([
      ['req_ok', { charged: parseUsd('1.500000000000000001'), billing: 'priced' }],
      ['req_off', { charged: parseUsd('2.000000000000000001'), billing: 'priced' }],
      ['req_missing', { charged: parseUsd('0.3'), billing: 'priced' }],
      ['req_failed', { charged: parseUsd('0'), billing: 'failed' }],
    ]);
    const r = await compareWithAnalytics(store, 'ws_a', charges);
    expect(r.status).toBe('compared');
    expect(r.differences).toEqual([
      expect.objectContaining({ id: 'req_off', expected: '2.000000000000000001', actual: '2' }),
      expect.objectContaining({ id: 'req_missing', expected: '0.3', actual: null }),
    ]);
  });
});
