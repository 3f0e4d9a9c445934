import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletDecider } from '../../src/commands/wallet/decider.js';
import { type WalletCommand, walletStream } from '../../src/commands/wallet/events.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { addUsd, formatUsd, parseUsd, subUsd, type Usd, usdFromAtto, ZERO_USD } from '../../src/lib/money.js';
import { catchUp } from '../../src/projections/runner.js';
import { walletProjection } from '../../src/projections/wallet/projection.js';
import { makeControlPlane } from '../../src/roles/control-plane.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc } from '../helpers/svc-process.js';

// 10,000 mixed money events replayed give exactly the read-model balance,
// and a corrupted read-model row is reported by `svc ledger replay` with exit code 1.

const EVENTS = 10_000;
let db: TestDatabase;
let store: PostgresEventStore;
let dataDir: string;
let ws: string;
let expected: Usd = ZERO_USD;
const chargedRequests: string[] = [];

/** A deterministic generator, so a failure reproduces. */
const rng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};

const replay = async (args: string[] = ['--json']) => {
  const r = await runSvc(['ledger', 'replay', '--workspace', ws, ...args], {
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
  });
  return { ...r, report: args.includes('--json') ? (JSON.parse(r.stdout) as Record<string, unknown>) : null };
};

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  dataDir = await mkdtemp(join(tmpdir(), 'svc-ledger-'));
  const cp = makeControlPlane(store, db.pool, randomBytes(32));
  ws = (await cp.createWorkspace({ id: 'cli' }, 'Ledger Replay')).workspace_id;

  const random = rng(20_261_122);
  // Amounts down to the last of the 18 decimal places, so any rounding anywhere would show.
  const amount = (maxWhole: number) =>
    usdFromAtto(
      BigInt(Math.floor(random() * maxWhole * 1e6)) * 10n ** 12n + BigInt(Math.floor(random() * 1e12)) + 1n,
    );
  const commands: WalletCommand[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const pick = random();
    if (pick < 0.08) {
      const a = amount(500);
      expected = addUsd(expected, a);
      commands.push({
        type: 'GrantCredit',
        transactionId: `wtx_g${i}`,
        amountUsd: formatUsd(a),
        reason: 'r',
        idempotencyKey: `k${i}`,
        via: 'cli',
      });
    } else if (pick < 0.14) {
      const a = amount(1_000);
      expected = addUsd(expected, a);
      commands.push({
        type: 'CreditTopUp',
        transactionId: `wtx_t${i}`,
        topupId: `topup_${i}`,
        provider: 'stripe',
        providerEventId: `evt_${i}`,
        paymentIntentId: `pi_${i}`,
        amountUsd: formatUsd(a),
      });
    } else if (pick < 0.17) {
      const a = amount(20);
      expected = subUsd(expected, a);
      commands.push({
        type: 'IssueRefund',
        transactionId: `wtx_r${i}`,
        refundId: `rf_${i}`,
        provider: 'stripe',
        providerRefundId: `re_${i}`,
        paymentIntentId: `pi_${i}`,
        amountUsd: formatUsd(a),
        holdId: `refund:${ws}:rf_${i}`,
      });
    } else if (pick < 0.19) {
      commands.push({ type: 'ExpireHold', holdId: `req_lost_${i}`, heldUsd: formatUsd(amount(1)) });
    } else {
      const failed = random() < 0.05;
      const a = amount(2);
      if (!failed) expected = subUsd(expected, a);
      chargedRequests.push(`req_${i}`);
      commands.push({
        type: 'SettleCharge',
        requestId: `req_${i}`,
        holdId: null,
        heldUsd: '0',
        totalCostUsd: formatUsd(a),
        funding: 'wallet',
        billingStatus: failed ? 'failed' : 'priced',
      });
    }
  }
  let position = 0;
  for (let i = 0; i < commands.length; i += 500) {
    const batch = commands.slice(i, i + 500).flatMap((c, j) =>
      walletDecider.decide(c, walletDecider.initialState()).map((e) => ({
        messageId: `replay-test:${i + j}`,
        type: e.type,
        data: e.data,
        metadata: {
          actor: 'test',
          now: new Date(Date.UTC(2026, 0, 1, 0, 0, (i + j) % 60)).toISOString(),
          tenant_id: ws,
        },
      })),
    );
    position = (await store.append(walletStream(ws), 'any', batch)).lastPosition;
  }
  await catchUp(db.pool, walletProjection, position);
}, 300_000);
afterAll(async () => {
  await store?.close();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('svc ledger replay', () => {
  it('10,000 mixed money events replay to exactly the read-model balance', async () => {
    const { rows } = await db.pool.query<{ balance_usd: string }>(
      'SELECT balance_usd FROM workspace_wallet_balances WHERE workspace_id = $1',
      [ws],
    );
    expect(formatUsd(parseUsd(rows[0]!.balance_usd))).toBe(formatUsd(expected));
    const r = await replay();
    expect(r.code).toBe(0);
    expect(r.report).toMatchObject({
      workspace_id: ws,
      events: EVENTS,
      balance_usd: formatUsd(expected),
      read_model_balance_usd: formatUsd(expected),
      differences: [],
    });
    expect(r.report?.analytics).toMatchObject({ status: 'skipped' });
  }, 120_000);

  it('a corrupted read-model row is reported with what the ledger says, and the exit code is 1', async () => {
    const victim = chargedRequests[1_234]!;
    await db.pool.query(
      'UPDATE workspace_wallet_charges SET charged_usd = charged_usd + 0.000000000000000001 WHERE request_id = $1',
      [victim],
    );
    await db.pool.query(
      'UPDATE workspace_wallet_balances SET balance_usd = balance_usd - 0.01 WHERE workspace_id = $1',
      [ws],
    );
    const r = await replay();
    expect(r.code).toBe(1);
    const differences = r.report?.differences as {
      kind: string;
      id: string;
      expected: string;
      actual: string;
    }[];
    expect(differences).toHaveLength(2);
    expect(differences).toContainEqual(
      expect.objectContaining({
        kind: 'balance',
        id: ws,
        expected: formatUsd(expected),
        actual: formatUsd(subUsd(expected, parseUsd('0.01'))),
      }),
    );
    expect(differences).toContainEqual(expect.objectContaining({ kind: 'charge', id: victim }));

    const human = await replay([]);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('2 difference(s)');
    expect(human.stdout).toContain(victim);
  }, 120_000);
});
