import { randomBytes } from 'node:crypto';
import { Logger, quickAddJob, runOnce } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { WALLET_TASKS, walletTaskList } from '../../jobs/wallet.js';
import { newId } from '../../lib/ids.js';
import { auditRecordOf } from '../../projections/audit-relay/audit-record.js';
import { replayLedger } from '../../projections/wallet/replay.js';
import { makeControlPlane } from '../../roles/control-plane.js';
import type { WalletService } from '../../roles/wallet.js';
import { createSettlement, makeWalletService } from '../../roles/wallet.js';
import { PostgresEscrow } from './postgres-escrow.js';

// SPEC 1.4 escrow holds and SPEC 3 reconciliation on a real PostgreSQL: the escrow adapter under concurrency, idempotent
// settlement, the expiry sweep and reconciliation run as graphile-worker jobs.

let db: TestDatabase;
let store: PostgresEventStore;
let wallet: WalletService;
const admin = { id: 'admin' };

const newWorkspace = async (name: string) => {
  const cp = makeControlPlane(store, db.pool, randomBytes(32));
  return (await cp.createWorkspace({ id: 'cli' }, `${name} ${randomBytes(3).toString('hex')}`)).workspace_id;
};
const fund = (ws: string, amount: string) =>
  wallet.grant(admin, ws, {
    amountUsd: amount,
    reason: 'test funding',
    idempotencyKey: newId('k'),
    via: 'cli',
  });

const envelope = (requestId: string, ws: string, total: string, billing: 'priced' | 'failed' = 'priced') => ({
  request_id: requestId,
  workspace_id: ws,
  funding: 'wallet' as const,
  billing:
    billing === 'priced'
      ? { status: 'priced' as const, rate_card_id: null }
      : { status: 'failed' as const, reason: 'missing_price' as const, detail: 'x', rate_card_id: null },
  total_cost_usd: total,
  finished_at: '2026-01-01T00:00:00.000Z',
});

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 12 });
  store = new PostgresEventStore(db.pool, db.url);
  wallet = makeWalletService(store, db.pool, { SVC_WALLET_HOLD_TTL_SECONDS: 3_600 }, null);
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('escrow holds', () => {
  it('200 concurrent holds on a wallet funded for exactly 50: 50 succeed, availability ends at exactly 0', async () => {
    const ws = await newWorkspace('Hot');
    await fund(ws, '5.000000000000000050');
    const escrow = new PostgresEscrow(db.pool);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        escrow.hold({ requestId: `req_hot_${i}`, workspaceId: ws, amountUsd: '0.100000000000000001' }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(50);
    const refused = results.filter((r) => !r.ok);
    expect(refused.every((r) => !r.ok && r.reason === 'insufficient_funds')).toBe(true);
    const balance = await wallet.reads.balance(ws);
    expect(balance).toMatchObject({
      balance_usd: '5.00000000000000005',
      held_usd: '5.00000000000000005',
      available_usd: '0',
    });
  });

  it('an unfunded workspace answers no_wallet; a repeated hold id holds once', async () => {
    const escrow = new PostgresEscrow(db.pool);
    expect(await escrow.hold({ requestId: 'req_x', workspaceId: 'ws_none', amountUsd: '1' })).toEqual({
      ok: false,
      reason: 'no_wallet',
    });
    const ws = await newWorkspace('Retry');
    await fund(ws, '1');
    const hold = { requestId: 'req_same', workspaceId: ws, amountUsd: '0.6' };
    expect(await escrow.hold(hold)).toEqual({ ok: true });
    expect(await escrow.hold(hold)).toEqual({ ok: true });
    expect((await wallet.reads.balance(ws)).held_usd).toBe('0.6');
    expect(await escrow.hold({ ...hold, requestId: 'req_other' })).toEqual({
      ok: false,
      reason: 'insufficient_funds',
      availableUsd: '0.4',
    });
  });
});

describe('settlement', () => {
  it('charges the priced total once per request id and releases the hold; billing failed charges 0', async () => {
    const ws = await newWorkspace('Settle');
    await fund(ws, '10');
    const escrow = new PostgresEscrow(db.pool);
    const { settleRequest } = createSettlement({ pool: db.pool, store, waitForBalance: true });
    await escrow.hold({ requestId: 'req_s1', workspaceId: ws, amountUsd: '2' });
    await escrow.hold({ requestId: 'req_s2', workspaceId: ws, amountUsd: '2' });
    expect((await wallet.reads.balance(ws)).available_usd).toBe('6');

    const first = await settleRequest(envelope('req_s1', ws, '0.123456789012345678'));
    const again = await settleRequest(envelope('req_s1', ws, '0.123456789012345678'));
    const failed = await settleRequest(envelope('req_s2', ws, '1.5', 'failed'));
    expect(first).toMatchObject({ outcome: 'charged', charged_usd: '0.123456789012345678', held_usd: '2' });
    expect(again.outcome).toBe('replayed');
    expect(failed).toMatchObject({ outcome: 'charged', charged_usd: '0' });
    expect(await wallet.reads.balance(ws)).toMatchObject({
      balance_usd: '9.876543210987654322',
      held_usd: '0',
      available_usd: '9.876543210987654322',
    });
    const byok = await settleRequest({ ...envelope('req_byok', ws, '3'), funding: 'byok' });
    expect(byok.outcome).toBe('skipped');
    const replay = await replayLedger(db.pool, ws);
    expect(replay.balance_usd).toBe('9.876543210987654322');
    expect(replay.differences).toEqual([]);
  });
});

describe('graphile-worker jobs', () => {
  const runJob = async (task: string, graceSeconds = 0) => {
    const logger = new Logger(() => () => {});
    await quickAddJob({ pgPool: db.pool, logger }, task, {});
    await runOnce({
      pgPool: db.pool,
      logger,
      noHandleSignals: true,
      taskList: walletTaskList({ pool: db.pool, store, reconcileGraceSeconds: graceSeconds }),
    });
  };

  it('sweeps an expired hold back to availability; a late settlement still charges', async () => {
    const ws = await newWorkspace('Expiry');
    await fund(ws, '3');
    const shortLived = new PostgresEscrow(db.pool, 1);
    await shortLived.hold({ requestId: 'req_lost', workspaceId: ws, amountUsd: '2.5' });
    expect((await wallet.reads.balance(ws)).available_usd).toBe('0.5');
    await new Promise((r) => setTimeout(r, 1_200));
    await runJob(WALLET_TASKS.expireHolds);
    expect(await wallet.reads.balance(ws)).toMatchObject({ held_usd: '0', available_usd: '3' });
    const { rows } = await db.pool.query('SELECT status FROM workspace_wallet_holds WHERE hold_id = $1', [
      'req_lost',
    ]);
    expect(rows[0]).toEqual({ status: 'expired' });

    const { settleRequest } = createSettlement({ pool: db.pool, store, waitForBalance: true });
    await settleRequest(envelope('req_lost', ws, '0.25'));
    expect(await wallet.reads.balance(ws)).toMatchObject({ balance_usd: '2.75', held_usd: '0' });
    expect((await replayLedger(db.pool, ws)).differences).toEqual([]);
  });

  it('reconciliation reports a settled payment with no credit as wallet.reconciliation.mismatch, once', async () => {
    const ws = await newWorkspace('Recon');
    await db.pool.query(
      `INSERT INTO workspace_payment_webhook_events (provider, provider_event_id, event_type, workspace_id,
         payment_intent_id, amount_usd, payload, processed_at, outcome)
       VALUES ('stripe', 'evt_lost', 'payment_intent.succeeded', $1, 'pi_lost', 12.5, '{}', NULL, NULL)`,
      [ws],
    );
    await runJob(WALLET_TASKS.reconcile);
    await runJob(WALLET_TASKS.reconcile);
    const { events } = await store.readStream(`wallet-${ws}`);
    const reports = events.filter((e) => e.type === 'ReconciliationMismatchFound');
    expect(reports).toHaveLength(1);
    const record = auditRecordOf(reports[0]!);
    expect(record).toMatchObject({
      tenant_id: ws,
      action: 'wallet.reconciliation.mismatch',
      target: { type: 'wallet', id: ws },
      details: { payment_intent_id: 'pi_lost', amount_usd: '12.5', provider_event_id: 'evt_lost' },
    });
  });
});
