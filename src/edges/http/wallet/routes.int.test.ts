import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/helpers/postgres.js';
import type { PaymentProvider } from '../../../commands/wallet/ports.js';
import { PostgresEscrow } from '../../../commands/wallet/postgres-escrow.js';
import { PostgresEventStore } from '../../../events/postgres/event-store.js';
import { HealthRegistry } from '../../../lib/health.js';
import { makeControlPlane } from '../../../roles/control-plane.js';
import { makeWalletService } from '../../../roles/wallet.js';
import { createHttpServer } from '../server.js';
import { registerWalletRoutes } from './routes.js';

// The console's JSON reads of a wallet (SPEC 4.6 names the CSV export, 2.9 the tables):
// the ledger page by page, newest first, with the same running balance as the CSV export; the
// active holds behind held_usd; the top-ups and their status.

const ADMIN = 'admin-token-for-wallet-routes';
const actor = { id: 'admin' };

/** A payment provider that only creates intents: enough for a pending top-up row. */
const payments: PaymentProvider = {
  name: 'stripe',
  publishableKey: 'pk_test_wallet_routes',
  browserApiBase: 'https://payments.invalid',
  createPaymentIntent: async (input) => ({
    id: `pi_${input.topupId}`,
    clientSecret: `pi_${input.topupId}_secret_x`,
  }),
  createRefund: async () => {
    throw new Error('not used');
  },
  verifyWebhook: () => {
    throw new Error('not used');
  },
};

let db: TestDatabase;
let store: PostgresEventStore;
let app: FastifyInstance;
let ws: string;
let other: string;

/** Console sessions: a member of `ws`, a manager of the other workspace, and a platform administrator. */
const sessions: Record<'member' | 'outsider' | 'admin', string> = { member: '', outsider: '', admin: '' };

const get = async (url: string, token = ADMIN) => {
  const r = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
  const json = r.headers['content-type']?.toString().includes('json');
  return { status: r.statusCode, body: (json ? r.json() : {}) as Record<string, unknown>, text: r.body };
};

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 7));
  const wallet = makeWalletService(store, db.pool, { SVC_WALLET_HOLD_TTL_SECONDS: 3_600 }, payments);
  app = await createHttpServer({
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    health: new HealthRegistry(),
    roles: [
      {
        name: 'control-plane',
        http: (scope) =>
          registerWalletRoutes(
            scope,
            { commands: wallet, ledger: wallet.reads, controlPlane: cp.reads },
            { token: ADMIN, emails: new Set(['ops@example.com']) },
          ),
      },
    ],
  });
  ws = (await cp.createWorkspace(actor, 'Wallet reads')).workspace_id;
  other = (await cp.createWorkspace(actor, 'Other wallet')).workspace_id;
  for (const [i, amount] of ['10', '2.5', '0.125', '7'].entries())
    await wallet.grant(actor, ws, {
      amountUsd: amount,
      reason: `grant ${i}`,
      idempotencyKey: `g-${i}`,
      via: 'cli',
    });
  await wallet.grant(actor, other, { amountUsd: '99', reason: 'other', idempotencyKey: 'o', via: 'cli' });
  // A settled charge, as the wallet projection writes it, after the grants in ledger order.
  const { rows } = await db.pool.query<{ max: string }>(
    'SELECT max(position)::text AS max FROM workspace_wallet_transactions',
  );
  await db.pool.query(
    `INSERT INTO workspace_wallet_charges (request_id, workspace_id, charged_usd, held_usd, billing_status, settled_at, position)
     VALUES ('req_charge_1', $1, 1.000000000000000001, 1, 'priced', now(), $2)`,
    [ws, Number(rows[0]!.max) + 1],
  );
  const escrow = new PostgresEscrow(db.pool, 3_600);
  expect(await escrow.hold({ requestId: 'req_hold_a', workspaceId: ws, amountUsd: '0.5' })).toEqual({
    ok: true,
  });
  expect(await escrow.hold({ requestId: 'req_hold_b', workspaceId: ws, amountUsd: '0.25' })).toEqual({
    ok: true,
  });
  await wallet.createTopUp(actor, ws, '25.00');
  const user = async (email: string, workspaceId: string, role: 'member' | 'manager') => {
    await cp.addUser(actor, email, { workspaceId, role });
    return (await cp.issueSession(actor, email, 3_600_000)).token;
  };
  sessions.member = await user('member@example.com', ws, 'member');
  sessions.outsider = await user('outsider@example.com', other, 'manager');
  // A platform administrator (SVC_PLATFORM_ADMINS) needs no membership of the workspace.
  sessions.admin = await user('Ops@Example.com', other, 'member');
}, 60_000);
afterAll(async () => {
  await app?.close();
  await store?.close();
  await db?.drop();
});

describe('GET /api/workspaces/:id/wallet/transactions', () => {
  it('pages the ledger newest first with the running balance of the CSV export', async () => {
    const first = await get(`/api/workspaces/${ws}/wallet/transactions?limit=2`);
    expect(first.status).toBe(200);
    const lines1 = first.body.data as {
      kind: string;
      id: string;
      amount_usd: string;
      balance_usd: string;
      position: number;
    }[];
    expect(lines1.map((l) => [l.kind, l.amount_usd, l.balance_usd])).toEqual([
      ['charge', '-1.000000000000000001', '18.624999999999999999'],
      ['grant', '7', '19.625'],
    ]);
    expect(first.body.has_more).toBe(true);
    expect(first.body.next_before).toBe(lines1[1]!.position);

    const second = await get(
      `/api/workspaces/${ws}/wallet/transactions?limit=2&before=${first.body.next_before}`,
    );
    const lines2 = second.body.data as { amount_usd: string; balance_usd: string }[];
    expect(lines2.map((l) => [l.amount_usd, l.balance_usd])).toEqual([
      ['0.125', '12.625'],
      ['2.5', '12.5'],
    ]);
    expect(second.body.has_more).toBe(true);
    const third = await get(
      `/api/workspaces/${ws}/wallet/transactions?limit=2&before=${second.body.next_before}`,
    );
    expect((third.body.data as { amount_usd: string }[]).map((l) => l.amount_usd)).toEqual(['10']);
    expect(third.body).toMatchObject({ has_more: false, next_before: null });

    // The same lines and balances as the CSV export (which runs oldest first).
    const csv = await get(`/api/workspaces/${ws}/wallet/transactions/export.csv`);
    const csvBalances = csv.text
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[5]);
    const all = await get(`/api/workspaces/${ws}/wallet/transactions?limit=200`);
    expect((all.body.data as { balance_usd: string }[]).map((l) => l.balance_usd).reverse()).toEqual(
      csvBalances,
    );
  });

  it('answers another workspace with its own lines only, and refuses bad paging parameters', async () => {
    const o = await get(`/api/workspaces/${other}/wallet/transactions`);
    expect((o.body.data as { amount_usd: string }[]).map((l) => l.amount_usd)).toEqual(['99']);
    for (const q of ['limit=0', 'limit=201', 'limit=x', 'before=0', 'before=-1', 'before=1.5'])
      expect((await get(`/api/workspaces/${ws}/wallet/transactions?${q}`)).status, q).toBe(400);
    expect((await get('/api/workspaces/ws_nope/wallet/transactions')).status).toBe(404);
  });
});

describe('who may read the wallet pages (SPEC 5)', () => {
  it('a member reads them; a manager of another workspace is refused; a platform administrator reads any', async () => {
    for (const page of ['transactions', 'holds', 'topups']) {
      const url = `/api/workspaces/${ws}/wallet/${page}`;
      expect((await get(url, sessions.member)).status, page).toBe(200);
      expect((await get(url, sessions.outsider)).status, page).toBe(403);
      expect((await get(url, sessions.admin)).status, page).toBe(200);
    }
  });

  it('only the platform administrator grants, and the grant names the administrator as its actor', async () => {
    const grant = (token: string, key: string) =>
      app.inject({
        method: 'POST',
        url: `/api/workspaces/${ws}/wallet/grants`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: { amount_usd: '1', reason: 'console', idempotency_key: key },
      });
    expect((await grant(sessions.member, 'm')).statusCode).toBe(403);
    expect((await grant(sessions.outsider, 'o')).statusCode).toBe(403);
    const ok = await grant(sessions.admin, 'a');
    expect(ok.statusCode).toBe(201);
    const lines = (await get(`/api/workspaces/${ws}/wallet/transactions?limit=1`)).body.data as {
      actor: string;
    }[];
    expect(lines[0]!.actor).toMatch(/^user:usr_/);
  });
});

describe('GET /api/workspaces/:id/wallet/holds and /topups', () => {
  it('lists the active holds that make up held_usd', async () => {
    const r = await get(`/api/workspaces/${ws}/wallet/holds`);
    expect(r.status).toBe(200);
    const holds = r.body.data as { hold_id: string; amount_usd: string }[];
    expect(holds.map((h) => [h.hold_id, h.amount_usd]).sort()).toEqual([
      ['req_hold_a', '0.5'],
      ['req_hold_b', '0.25'],
    ]);
    expect((await get(`/api/workspaces/${ws}/wallet`)).body).toMatchObject({ held_usd: '0.75' });
    expect((await get(`/api/workspaces/${other}/wallet/holds`)).body.data).toEqual([]);
  });

  it('lists top-ups with their payment intent and status, never the client secret', async () => {
    const r = await get(`/api/workspaces/${ws}/wallet/topups`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([
      expect.objectContaining({ amount_usd: '25', status: 'pending', provider: 'stripe', settled_at: null }),
    ]);
    expect(r.text).not.toContain('secret');
  });
});
