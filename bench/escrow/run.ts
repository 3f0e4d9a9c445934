import pg from 'pg';
import { PostgresEscrow } from '../../src/commands/wallet/postgres-escrow.js';
import { addUsd, formatUsd, mulUsd, parseUsd, ZERO_USD } from '../../src/lib/money.js';
import { benchDatabase } from '../lib/database.js';
import { perSecond, printTable } from '../lib/report.js';

// npm run bench:escrow — escrow holds per second on the PostgreSQL adapter: one hot
// wallet where every hold queues on the same row lock, and 100 wallets where holds spread out.
// Each hold is the hot path's single round trip (svc_wallet_hold). Afterwards the held funds of
// every wallet must equal the sum of its holds, and no wallet may be below zero.
//
// On one wallet every hold waits for the previous one's commit (its row lock is released only once
// the commit record is flushed), so the hot-wallet rate is about 1 / WAL flush time. The last row
// measures the same with synchronous_commit off, for comparison only: the service keeps durable
// commits, because a hold lost in a crash would let in-flight requests overspend.

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const HOLD = '0.000123456789012345';
const WALLETS = 100;

const db = await benchDatabase('escrow');
let escrow = new PostgresEscrow(db.pool);
const fund = (workspaces: string[], amount: string) =>
  db.pool.query(
    'INSERT INTO workspace_wallet_balances (workspace_id, balance_usd) SELECT unnest($1::text[]), $2::numeric',
    [workspaces, amount],
  );

interface Run {
  holds: number;
  refused: number;
  seconds: number;
  p50: number;
  p99: number;
}

/** Holds as fast as CONCURRENCY callers can place them for SECONDS, round-robin over `workspaces`. */
const hammer = async (label: string, workspaces: string[]): Promise<Run> => {
  const latencies: number[] = [];
  let refused = 0;
  let n = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1_000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const i = n++;
        const t = performance.now();
        const r = await escrow.hold({
          requestId: `${label}_${i}`,
          workspaceId: workspaces[i % workspaces.length]!,
          amountUsd: HOLD,
        });
        latencies.push(performance.now() - t);
        if (!r.ok) refused++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1_000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { holds: latencies.length, refused, seconds, p50: at(0.5), p99: at(0.99) };
};

try {
  const hot = ['ws_bench_hot'];
  const spread = Array.from({ length: WALLETS }, (_, i) => `ws_bench_${i}`);
  await fund([...hot, ...spread], '1000000000');
  // Warm the pool's connections and their prepared statement before measuring.
  await hammer('warm', spread);
  const one = await hammer('hot', hot);
  const many = await hammer('spread', spread);
  const asyncPool = new pg.Pool({ connectionString: db.url, max: 16, options: '-c synchronous_commit=off' });
  asyncPool.on('error', () => {});
  let relaxed: Run;
  try {
    escrow = new PostgresEscrow(asyncPool);
    await hammer('warm_async', hot);
    relaxed = await hammer('hot_async', hot);
  } finally {
    await asyncPool.end();
  }

  // Invariants: held equals the sum of active holds; available never below zero.
  const { rows } = await db.pool.query<{
    workspace_id: string;
    held: string;
    holds: string | null;
    available: string;
  }>(
    `SELECT b.workspace_id, b.held_usd AS held, b.balance_usd - b.held_usd AS available,
            (SELECT sum(amount_usd) FROM workspace_wallet_holds h
              WHERE h.workspace_id = b.workspace_id AND h.status = 'active') AS holds
     FROM workspace_wallet_balances b`,
  );
  let totalHeld = ZERO_USD;
  for (const r of rows) {
    if (parseUsd(r.held) !== parseUsd(r.holds ?? '0'))
      throw new Error(`${r.workspace_id}: held differs from its holds`);
    if (parseUsd(r.available) < 0n) throw new Error(`${r.workspace_id}: available below zero`);
    totalHeld = addUsd(totalHeld, parseUsd(r.held));
  }
  const placed = Number(
    (await db.pool.query('SELECT count(*)::int AS n FROM workspace_wallet_holds')).rows[0].n,
  );
  if (formatUsd(totalHeld) !== formatUsd(mulUsd(parseUsd(HOLD), placed)))
    throw new Error('total held differs from the holds placed');

  const row = (label: string, r: Run) => ({
    metric: `${label} (${CONCURRENCY} concurrent callers, ${r.holds.toLocaleString('en-US')} holds)`,
    measured: `${perSecond(r.holds, r.seconds)}  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`,
  });
  printTable('bench/escrow (PostgreSQL escrow adapter, one round trip per hold)', [
    row('holds, 1 hot wallet', one),
    row(`holds, across ${WALLETS} wallets`, many),
    row('holds, 1 hot wallet, synchronous_commit off (comparison only)', relaxed),
    { metric: 'invariants: held = sum of holds, available >= 0', measured: 'ok' },
  ]);
} finally {
  await db.drop();
}
