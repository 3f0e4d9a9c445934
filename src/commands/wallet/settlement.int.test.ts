import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import type { EventStore, StreamAppend } from '../../events/event-store.js';
import { IdempotencyMismatchError } from '../../events/event-store.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { newId } from '../../lib/ids.js';
import { replayLedger } from '../../projections/wallet/replay.js';
import { makeControlPlane } from '../../roles/control-plane.js';
import { createSettlement, makeWalletService, type WalletService } from '../../roles/wallet.js';
import { PostgresEscrow } from './postgres-escrow.js';
import { settlement } from './settlement.js';

// Settlement of a flush in one transaction (SPEC 1.4, 8 escrow hold; SPEC 6 ack after the durable
// write): the calls of one turn share a look-up and an append, a request the store refuses fails
// alone, a store that fails before or after its commit leaves every request to be settled again,
// and settling again never charges twice.

let db: TestDatabase;
let store: PostgresEventStore;
let wallet: WalletService;

const newWorkspace = async () => {
  const cp = makeControlPlane(store, db.pool, randomBytes(32));
  const ws = (await cp.createWorkspace({ id: 'cli' }, `Batch ${randomBytes(3).toString('hex')}`))
    .workspace_id;
  await wallet.grant({ id: 'admin' }, ws, {
    amountUsd: '100',
    reason: 'test funding',
    idempotencyKey: newId('k'),
    via: 'cli',
  });
  return ws;
};

const envelope = (requestId: string, ws: string, total: string) => ({
  request_id: requestId,
  workspace_id: ws,
  funding: 'wallet' as const,
  billing: { status: 'priced' as const, rate_card_id: null },
  total_cost_usd: total,
  finished_at: '2026-01-01T00:00:00.000Z',
});

/** The real store, counting its batch appends, and failing them when told to (before or after commit). */
const watched = (fail: { when: 'none' | 'before' | 'after' }) => {
  const calls: StreamAppend[][] = [];
  const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
  const wrapped: EventStore = Object.assign(Object.create(store) as EventStore, {
    appendMany: async (appends: readonly StreamAppend[]) => {
      calls.push([...appends]);
      if (fail.when === 'before') throw lost();
      const results = await store.appendMany(appends);
      if (fail.when === 'after') throw lost();
      return results;
    },
  });
  return { wrapped, calls };
};

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 12 });
  store = new PostgresEventStore(db.pool, db.url);
  wallet = makeWalletService(store, db.pool, { SVC_WALLET_HOLD_TTL_SECONDS: 3_600 }, null);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('settlement of a flush', () => {
  it('settles the calls of one turn in one append; settling them again charges nothing more', async () => {
    const ws = await newWorkspace();
    const escrow = new PostgresEscrow(db.pool);
    for (let i = 0; i < 10; i++)
      await escrow.hold({ requestId: `req_b${i}_${ws}`, workspaceId: ws, amountUsd: '1' });
    const { wrapped, calls } = watched({ when: 'none' });
    const { settleRequest } = createSettlement({ pool: db.pool, store: wrapped, waitForBalance: true });
    const envelopes = Array.from({ length: 20 }, (_, i) =>
      envelope(`req_b${i}_${ws}`, ws, '0.000000000000000001'),
    );
    const first = await Promise.all(envelopes.map((e) => settleRequest(e)));
    expect(calls.length).toBe(1);
    expect(calls[0]!.length).toBe(20);
    expect(first.every((s) => s.outcome === 'charged')).toBe(true);
    expect(first.slice(0, 10).every((s) => s.held_usd === '1')).toBe(true);
    const again = await Promise.all(envelopes.map((e) => settleRequest(e)));
    expect(again.every((s) => s.outcome === 'replayed')).toBe(true);
    expect(await wallet.reads.balance(ws)).toMatchObject({
      balance_usd: '99.99999999999999998',
      held_usd: '0',
    });
    expect((await replayLedger(db.pool, ws)).differences).toEqual([]);
  });

  it('a request the store refuses fails alone; the others of its batch are charged', async () => {
    const ws = await newWorkspace();
    // The charge's message id is already taken by another stream: the store refuses that append.
    const bad = `req_bad_${ws}`;
    await store.append('elsewhere-1', 'any', [
      { messageId: `wallet:charge:${bad}:0`, type: 'Noted', data: {} },
    ]);
    const { wrapped, calls } = watched({ when: 'none' });
    const { settleRequest } = createSettlement({ pool: db.pool, store: wrapped, waitForBalance: true });
    const results = await Promise.allSettled(
      [`req_g1_${ws}`, bad, `req_g2_${ws}`].map((id) => settleRequest(envelope(id, ws, '2'))),
    );
    expect(calls.length).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyMismatchError);
    expect((await wallet.reads.balance(ws)).balance_usd).toBe('96');
  });

  for (const when of ['before', 'after'] as const) {
    it(`a store failing ${when} its commit fails every request; settling again charges each once`, async () => {
      const ws = await newWorkspace();
      const ids = [1, 2, 3].map((i) => `req_${when}${i}_${ws}`);
      const failing = watched({ when });
      const { settleRequests } = settlement({ store: failing.wrapped, holds: new PostgresEscrow(db.pool) });
      const failed = await settleRequests(ids.map((id) => envelope(id, ws, '1.5')));
      expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      // No one-by-one retry against a store that is down.
      expect(failing.calls.length).toBe(1);
      const { settleRequest } = createSettlement({ pool: db.pool, store, waitForBalance: true });
      const redelivered = await Promise.all(ids.map((id) => settleRequest(envelope(id, ws, '1.5'))));
      expect(redelivered.map((s) => s.outcome)).toEqual(
        Array(3).fill(when === 'before' ? 'charged' : 'replayed'),
      );
      expect((await wallet.reads.balance(ws)).balance_usd).toBe('95.5');
      expect((await replayLedger(db.pool, ws)).differences).toEqual([]);
    });
  }
});
