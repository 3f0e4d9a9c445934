import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyticsContract } from '../../../test/contract/analytics.contract.js';
import { ChdbAnalyticsStore, chdbPath } from './store.js';

analyticsContract('chdb in a worker thread', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-chdb-contract-'));
  // Holding one store open keeps the engine (one per process) up between tests.
  const admin = await ChdbAnalyticsStore.open({ path: dir });
  return {
    open: (database) => ChdbAnalyticsStore.open({ path: dir, database, createDatabase: true }),
    drop: (database) => admin.command(`DROP DATABASE IF EXISTS ${database} SYNC`),
    cleanup: async () => {
      await admin.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('chdb adapter', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-chdb-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps its data under <data dir>/clickhouse across a close and reopen', async () => {
    const path = chdbPath(dataDir);
    expect(path).toBe(join(dataDir, 'clickhouse'));
    const first = await ChdbAnalyticsStore.open({ path, database: 'persist', createDatabase: true });
    await first.command('CREATE TABLE kept (id UInt32) ENGINE = MergeTree ORDER BY id');
    await first.insert('kept', [{ id: 1 }, { id: 2 }]);
    await first.close();

    const second = await ChdbAnalyticsStore.open({ path, database: 'persist' });
    try {
      expect(await second.query('SELECT id FROM kept ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }]);
    } finally {
      await second.close();
    }
  });

  it('runs queries off the event loop: timers keep firing during a heavy query', async () => {
    const store = await ChdbAnalyticsStore.open({ path: chdbPath(dataDir) });
    try {
      let ticks = 0;
      const timer = setInterval(() => {
        ticks += 1;
      }, 5);
      const started = performance.now();
      const [row] = await store.query<{ s: string }>(
        'SELECT sum(sipHash64(number)) AS s FROM numbers(30000000)',
      );
      const queryMs = performance.now() - started;
      clearInterval(timer);
      expect(row?.s).toMatch(/^\d+$/);
      // A query on the main thread would let no timer fire until it returned. Counting ticks
      // rather than timing gaps keeps this true on a loaded machine (no timing targets in tests).
      expect(queryMs).toBeGreaterThan(100);
      expect(ticks).toBeGreaterThanOrEqual(3);
    } finally {
      await store.close();
    }
  });
});
