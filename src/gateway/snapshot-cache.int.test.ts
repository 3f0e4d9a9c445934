import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import { SnapshotCache } from './snapshot-cache.js';

// A snapshot cache polls eagerly after an append of the categories it is made of, and not after
// others: every request's wallet settlement must not set every cache of every process polling
// (migrations/postgres/0023; issue: performance).

let db: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

let n = 0;
const appendTo = (category: string) =>
  store.append(`${category}-s`, 'any', [{ messageId: `m-${++n}-${Math.random()}`, type: 'Noted', data: {} }]);

describe('SnapshotCache', () => {
  it('polls eagerly after appends of its own categories only', async () => {
    let polls = 0;
    const cache = new SnapshotCache(
      {
        categories: ['mine'],
        revision: async () => {
          polls++;
          return 0;
        },
        load: async () => 'snapshot',
      },
      db.url,
      { pollMs: 60_000, eagerPollMs: 10, eagerWindowMs: 300 },
    );
    await cache.start();
    try {
      const started = polls;
      for (let i = 0; i < 10; i++) {
        await appendTo('theirs');
        await new Promise((r) => setTimeout(r, 30));
      }
      expect(polls - started).toBe(0);
      await appendTo('mine');
      await expect.poll(() => polls - started, { timeout: 2_000 }).toBeGreaterThan(5);
    } finally {
      await cache.stop();
    }
  });
});
