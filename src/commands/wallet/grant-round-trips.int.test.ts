import Fastify from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { registerWalletRoutes } from '../../edges/http/wallet/routes.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { makeControlPlane } from '../../roles/control-plane.js';
import { makeWalletService } from '../../roles/wallet.js';

// What one operator grant costs the database (SPEC 3 grant row, 4.6 POST wallet grants): every
// statement a pg client sends while the route answers is one round trip. The grant asks whether
// its workspace exists once, looks for an earlier grant under its idempotency key once, appends
// once, and brings the balance read model up to its event (read-your-writes: the wallet balance
// has increased when the 201 arrives); a replayed key costs the two lookups only.

const ADMIN = 'admin-token-for-round-trips';

let db: TestDatabase;
let store: PostgresEventStore;
const sent: string[] = [];
let recording = false;
const query = pg.Client.prototype.query;

const statement = (args: unknown[]): string => {
  const first = args[0] as string | { text?: string };
  return (typeof first === 'string' ? first : (first.text ?? '')).replace(/\s+/g, ' ').trim();
};

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (recording) sent.push(statement(args));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
});
afterAll(async () => {
  pg.Client.prototype.query = query;
  await store?.close();
  await db?.drop();
});

const recorded = async <T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> => {
  sent.length = 0;
  recording = true;
  try {
    return { result: await fn(), statements: [...sent] };
  } finally {
    recording = false;
  }
};

describe('a wallet grant over HTTP', () => {
  it('asks for its workspace once and answers from the event it appended', async () => {
    const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 1));
    const { workspace_id: ws } = await cp.createWorkspace({ id: 'admin' }, 'Round trips');
    const wallet = makeWalletService(store, db.pool, { SVC_WALLET_HOLD_TTL_SECONDS: 3_600 }, null);
    const app = Fastify();
    await registerWalletRoutes(
      app,
      { commands: wallet, ledger: wallet.reads, controlPlane: cp.reads },
      ADMIN,
    );
    const grant = (key: string) =>
      app.inject({
        method: 'POST',
        url: `/api/workspaces/${ws}/wallet/grants`,
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: { amount_usd: '1.50', reason: 'round trips', idempotency_key: key },
      });
    // The first batch of a projection creates its checkpoint row; measure a warm one.
    expect((await grant('warm-up')).statusCode).toBe(201);

    const fresh = await recorded(() => grant('k-1'));
    expect(fresh.result.statusCode).toBe(201);
    const replay = await recorded(() => grant('k-1'));
    expect(replay.result.statusCode).toBe(200);
    expect(replay.result.json()).toEqual({ ...fresh.result.json(), replayed: true });
    await app.close();

    const count = (statements: string[], pattern: RegExp) => statements.filter((s) => pattern.test(s)).length;
    console.info(
      `grant round trips: fresh ${fresh.statements.length}, replayed ${replay.statements.length}\n  ${fresh.statements.join('\n  ')}`,
    );
    expect(count(fresh.statements, /rm_workspaces/)).toBe(1);
    expect(count(fresh.statements, /FROM workspace_wallet_transactions/)).toBe(1);
    expect(count(fresh.statements, /svc_append_events/)).toBe(1);
    expect(fresh.statements.length).toBeLessThanOrEqual(13);
    expect(replay.statements).toHaveLength(2);
    expect((await wallet.reads.balance(ws)).balance_usd).toBe('3');
  });
});
