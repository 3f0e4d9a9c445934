import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../../../test/fakes/clickhouse-http.js';
import {
  draftFor,
  scenario,
  suppressedWrites,
  waitFor,
} from '../../../test/fixtures/ingest/ingest.fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { HttpAnalyticsStore } from '../../analytics/http/store.js';
import { migrateClickHouse } from '../../analytics/migrate.js';
import type { OutgoingMessage } from '../../events/bus.js';
import { buildRequestRecord } from '../../events/envelopes/record.js';
import { PostgresBus } from '../../events/postgres/bus.js';

// Ingest through the HTTP ClickHouse adapter (SPEC 6, 8 durability read-back): a flush of hundreds
// of requests is read back and committed. The read-back once named every request id of the flush
// in its query parameters, which travel in the URL, and a flush this size went past the server's
// URL limit: every read-back failed and nothing was ever acked.

let db: TestDatabase;
let dir: string;
let server: FakeClickHouse;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'svc-ingest-http-'));
  server = await startFakeClickHouse({ path: dir });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('ingest over the HTTP adapter', () => {
  it('commits a flush of 800 requests, each read back', async () => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url, subjectPrefix: 'http', pollMs: 100 });
    await bus.ensureStreams();
    const store = await HttpAnalyticsStore.open({
      url: server.url,
      database: 'ingest_http',
      createDatabase: true,
    });
    await migrateClickHouse(store);
    const s = await scenario(bus, store, 'ingest_http');
    const messages: OutgoingMessage[] = [];
    for (let i = 0; i < 800; i++) messages.push(...buildRequestRecord(draftFor('http', i)).record.messages);
    await bus.publishMany(messages);
    const consumer = await s.consumer({ flushIntervalMs: 1_000, fetchBatch: 1_000 });
    await waitFor(async () => consumer.stats().committed === 800, 40_000, '800 requests committed');
    expect(consumer.stats().leftUnacked).toBe(0);
    expect(await suppressedWrites(s.registry)).toBe(0);
    const [row] = await store.query<{ n: string }>('SELECT count() AS n FROM requests FINAL');
    expect(Number(row!.n)).toBe(800);
    await s.cleanup();
    await bus.close();
    await store.close();
  });
});
