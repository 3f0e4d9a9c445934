import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draftFor, scenario, sharedChdb, waitFor } from '../../../test/fixtures/ingest/ingest.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { buildRequestRecord } from '../../events/envelopes/record.js';
import { PostgresBus } from '../../events/postgres/bus.js';

// A trickle of records (the shape `svc serve` delivers under load, SPEC 6) is flushed at most once
// per flush interval, whatever the rate: every flush pays the engine a fixed price per table
// written, so flushes that follow each other as soon as one ends would multiply it.

let chdb: Awaited<ReturnType<typeof sharedChdb>>;
let db: TestDatabase;

beforeAll(async () => {
  chdb = await sharedChdb();
  db = await createTestDatabase();
});
afterAll(async () => {
  await chdb?.close();
  await db?.drop();
});

describe('flush pacing', () => {
  it('a trickle over 2 s with a 500 ms interval takes at most one flush per interval; each record waits at most about one', async () => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url, subjectPrefix: 'pace', pollMs: 100 });
    await bus.ensureStreams();
    const store = await chdb.open();
    const s = await scenario(bus, store, 'ingest_pacing');
    const lags: number[] = [];
    const consumer = await s.consumer({
      flushIntervalMs: 500,
      onRequestLogged: (e) => {
        lags.push(Date.now() - Date.parse(e.finished_at));
      },
    });
    const started = Date.now();
    let i = 0;
    while (Date.now() - started < 2_000) {
      const { record } = buildRequestRecord(draftFor('pace', i++, { finished_at: new Date().toISOString() }));
      await bus.publishMany(record.messages);
      await new Promise((r) => setTimeout(r, 10));
    }
    await waitFor(async () => consumer.stats().committed === i, 20_000, 'every record committed');
    const { flushes } = consumer.stats();
    // 2 s of trickle plus the last partial interval: five flushes at most, where flushing again as
    // soon as one ended ran one after another for as long as records kept coming.
    expect(flushes).toBeLessThanOrEqual(6);
    expect(flushes).toBeGreaterThanOrEqual(4);
    // One interval of waiting, then the flush itself (generous for a loaded machine).
    expect(Math.max(...lags)).toBeLessThan(5_000);
    await s.cleanup();
    await bus.close();
    await store.close();
  });
});
