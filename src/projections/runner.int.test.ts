import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import type { StoredEvent } from '../events/event-store.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import type { PoolClient } from '../events/postgres/pool.js';
import type { Projection } from './projection.js';
import { checkpointOf, ProjectionRunner, readModelRevision, rebuildProjection, runBatch } from './runner.js';

// Projection runner (STYLE.md rule 5).

let db: TestDatabase;
let store: PostgresEventStore;
const STREAMS = 40;
const EVENTS = 2_000;

/** A ledger-like read model: per account balance and event count, plus every applied position. */
const ledger = (
  table: string,
  hooks: { onEvent?: (e: StoredEvent, client: PoolClient) => Promise<void> } = {},
  version = 1,
): Projection => ({
  name: table,
  version,
  categories: ['acct'],
  reset: async (client) => {
    await client.query(`TRUNCATE ${table}, ${table}_applied`);
  },
  apply: async (client, events) => {
    for (const e of events) {
      await hooks.onEvent?.(e, client);
      const amount = (e.data as { amount: number }).amount;
      await client.query(
        `INSERT INTO ${table} (account, balance, events) VALUES ($1, $2, 1)
         ON CONFLICT (account) DO UPDATE SET balance = ${table}.balance + $2, events = ${table}.events + 1`,
        [e.streamId, amount],
      );
      // The primary key makes a second application of one event fail loudly.
      await client.query(`INSERT INTO ${table}_applied (position) VALUES ($1)`, [e.globalPosition]);
    }
  },
});

const createLedgerTables = async (table: string) => {
  await db.pool.query(
    `CREATE TABLE ${table} (account text PRIMARY KEY, balance bigint NOT NULL, events int NOT NULL);
     CREATE TABLE ${table}_applied (position bigint PRIMARY KEY)`,
  );
};

const rowsOf = async (table: string) =>
  (await db.pool.query(`SELECT account, balance, events FROM ${table} ORDER BY account`)).rows;

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 20 });
  store = new PostgresEventStore(db.pool, db.url);
  for (let batch = 0; batch < EVENTS / 100; batch++) {
    await Promise.all(
      Array.from({ length: STREAMS }, (_, s) =>
        store.append(
          `acct-${s}`,
          'any',
          Array.from({ length: 100 / STREAMS + (s < 100 % STREAMS ? 1 : 0) }, (_, i) => ({
            messageId: `seed-${batch}-${s}-${i}`,
            type: 'Moved',
            data: { amount: ((batch * 31 + s * 7 + i) % 200) - 100 },
          })),
        ),
      ),
    );
  }
  // Events of another category the ledger must skip.
  await store.append('other-1', 'no_stream', [{ messageId: 'noise-1', type: 'Noise', data: {} }]);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('projection runner', () => {
  it('a projection that crashes mid-batch and restarts equals a clean replay, row for row', async () => {
    await createLedgerTables('crashy');
    await createLedgerTables('clean');
    const crashAt = 1_234;
    let crashes = 0;
    const crashing = ledger('crashy', {
      onEvent: async (e, client) => {
        if (e.globalPosition === crashAt && crashes === 0) {
          crashes++;
          // The process dies mid-batch: its connection goes away with the open transaction.
          await client.query('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => {});
          throw new Error('crashed');
        }
      },
    });
    let failure: unknown = null;
    for (;;) {
      try {
        const r = await runBatch(db.pool, crashing, { batchSize: 150 });
        if (r.applied === 0) break;
      } catch (err) {
        failure = err;
        break;
      }
    }
    expect(failure).not.toBeNull();
    const stopped = await checkpointOf(db.pool, 'crashy');
    expect(stopped!.position).toBeLessThan(crashAt);

    // Restart: a fresh runner resumes from the checkpoint.
    const restarted = new ProjectionRunner(db.pool, db.url, [ledger('crashy')], {
      batchSize: 150,
      pollMs: 50,
    });
    restarted.start();
    await restarted.waitForHead();
    await restarted.stop();

    await rebuildProjection(db.pool, ledger('clean'));
    const [a, b] = [await rowsOf('crashy'), await rowsOf('clean')];
    expect(a).toHaveLength(STREAMS);
    expect(a).toEqual(b);
    const applied = await db.pool.query('SELECT count(*)::int AS n FROM crashy_applied');
    expect(applied.rows[0].n).toBe(EVENTS);
  });

  it('two runners on one projection never both apply an event', async () => {
    await createLedgerTables('shared');
    const errors: unknown[] = [];
    const onError = (_: string, err: unknown) => errors.push(err);
    const runners = [1, 2].map(
      () => new ProjectionRunner(db.pool, db.url, [ledger('shared')], { batchSize: 50, pollMs: 20, onError }),
    );
    for (const r of runners) r.start();
    await Promise.all(runners.map((r) => r.waitForHead()));
    await Promise.all(runners.map((r) => r.stop()));
    expect(errors).toEqual([]);
    const applied = await db.pool.query('SELECT count(*)::int AS n FROM shared_applied');
    expect(applied.rows[0].n).toBe(EVENTS);
  });

  it('a version bump rebuilds the read model by replay', async () => {
    await createLedgerTables('versioned');
    await rebuildProjection(db.pool, ledger('versioned', {}, 1));
    await db.pool.query(`UPDATE versioned SET balance = 0`); // drift that only a rebuild repairs
    const r = await runBatch(db.pool, ledger('versioned', {}, 2), { batchSize: 10_000 });
    expect(r.rebuilt).toBe(true);
    await createLedgerTables('reference');
    await rebuildProjection(db.pool, ledger('reference'));
    expect(await rowsOf('versioned')).toEqual(await rowsOf('reference'));
    expect((await checkpointOf(db.pool, 'versioned'))!.version).toBe(2);
  });

  it("the read model's revision moves when it changed, not when the checkpoint only passed other categories' events", async () => {
    await createLedgerTables('revised');
    const revised = ledger('revised');
    await rebuildProjection(db.pool, revised);
    const built = await readModelRevision(db.pool, 'revised', ['acct']);
    expect(built).toBeGreaterThan(0);
    const before = (await checkpointOf(db.pool, 'revised'))!.position;
    await store.append('other-2', 'no_stream', [{ messageId: 'noise-2', type: 'Noise', data: {} }]);
    await runBatch(db.pool, revised);
    expect((await checkpointOf(db.pool, 'revised'))!.position).toBeGreaterThan(before);
    expect(await readModelRevision(db.pool, 'revised', ['acct'])).toBe(built);
    // Appended but not applied yet: the read model has not changed.
    const moved = await store.append('acct-0', 'any', [
      { messageId: 'revised-1', type: 'Moved', data: { amount: 1 } },
    ]);
    expect(await readModelRevision(db.pool, 'revised', ['acct'])).toBe(built);
    await runBatch(db.pool, revised);
    expect(await readModelRevision(db.pool, 'revised', ['acct'])).toBe(moved.lastPosition);
    // A checkpoint moved by other code (a server of an earlier version) counts the same.
    const again = await store.append('acct-1', 'any', [
      { messageId: 'revised-2', type: 'Moved', data: { amount: 2 } },
    ]);
    await db.pool.query('UPDATE svc_projection_checkpoints SET position = $2 WHERE name = $1', [
      'revised',
      again.lastPosition,
    ]);
    expect(await readModelRevision(db.pool, 'revised', ['acct'])).toBe(again.lastPosition);
  });
});
