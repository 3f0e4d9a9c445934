import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { VersionConflictError } from '../events/event-store.js';
import { PostgresEventStore } from '../events/postgres/event-store.js';
import { ServiceError } from '../lib/errors.js';
import type { CommandContext, Decider } from './decider.js';
import { handleCommand } from './handler.js';

// Command handling: load, decide, append with expected version, opt-in retry.

type Cmd = { type: 'Add'; amount: number };
type Ev = { type: 'Added'; data: { amount: number } };
const counter: Decider<Cmd, Ev, { total: number }> = {
  initialState: () => ({ total: 0 }),
  evolve: (s, e) => ({ total: s.total + e.data.amount }),
  decide: (c, s) => {
    if (s.total + c.amount > 100) throw new ServiceError('bad_request', 'limit is 100');
    return [{ type: 'Added', data: { amount: c.amount } }];
  },
};

let db: TestDatabase;
let store: PostgresEventStore;
let n = 0;
const ctx = (over: Partial<CommandContext> = {}): CommandContext => ({
  commandId: `cmd-${++n}-${Math.random()}`,
  actor: 'user:test',
  now: '2026-11-22T00:00:00.000Z',
  ...over,
});

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 30 });
  store = new PostgresEventStore(db.pool, db.url);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('handleCommand', () => {
  it('given history, when deciding, then appends with metadata and returns the new state', async () => {
    await handleCommand(store, counter, 'counter-a', { type: 'Add', amount: 5 }, ctx());
    const r = await handleCommand(
      store,
      counter,
      'counter-a',
      { type: 'Add', amount: 7 },
      ctx({ actor: 'admin' }),
    );
    expect(r.state.total).toBe(12);
    expect(r.version).toBe(2);
    const { events } = await store.readStream('counter-a');
    expect(events[1]!.metadata).toMatchObject({ actor: 'admin', now: '2026-11-22T00:00:00.000Z' });
    expect(events[1]!.metadata.correlation_id).toBeTruthy();
  });

  it('a rejected command appends nothing', async () => {
    await handleCommand(store, counter, 'counter-b', { type: 'Add', amount: 90 }, ctx());
    await expect(
      handleCommand(store, counter, 'counter-b', { type: 'Add', amount: 20 }, ctx()),
    ).rejects.toThrow('limit is 100');
    expect((await store.readStream('counter-b')).version).toBe(1);
  });

  it('a retried command id is a no-op returning the original events', async () => {
    const c = ctx();
    await handleCommand(store, counter, 'counter-c', { type: 'Add', amount: 3 }, c);
    const again = await handleCommand(store, counter, 'counter-c', { type: 'Add', amount: 3 }, c);
    expect(again.replayed).toBe(true);
    expect((await store.readStream('counter-c')).version).toBe(1);
  });

  it('conflicts surface without retries and resolve with opt-in retries', async () => {
    const without = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        handleCommand(store, counter, 'counter-d', { type: 'Add', amount: 1 }, ctx()),
      ),
    );
    const conflicts = without.filter((r) => r.status === 'rejected');
    expect(conflicts.length).toBeGreaterThan(0);
    for (const c of conflicts)
      expect((c as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);

    const before = (await store.readStream('counter-e')).version;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        handleCommand(store, counter, 'counter-e', { type: 'Add', amount: 1 }, ctx(), { retries: 20 }),
      ),
    );
    expect((await store.readStream('counter-e')).version).toBe(before + 10);
  });
});
