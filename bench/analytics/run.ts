/**
 * Embedded analytics throughput: insert rows/s into a ReplacingMergeTree
 * through the chdb adapter (JSONEachRow encoding on the main thread included, as in production),
 * then the time of a group-by over all rows, plain and with FINAL, and the longest event-loop stall
 * seen meanwhile. Runs in a temporary data dir, removed afterwards.
 *
 *   npm run bench:analytics      BENCH_ANALYTICS_ROWS (default 1000000), BENCH_ANALYTICS_BATCH (10000)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbAnalyticsStore, chdbPath } from '../../src/analytics/chdb/store.js';
import { perSecond, printTable, timed } from '../lib/report.js';

const ROWS = Number(process.env.BENCH_ANALYTICS_ROWS ?? 1_000_000);
const BATCH = Number(process.env.BENCH_ANALYTICS_BATCH ?? 10_000);
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet', 'claude-haiku', 'llama-70b'];
const PROVIDERS = ['openai', 'anthropic', 'bedrock', 'azure'];
const START = Date.parse('2026-01-01T00:00:00Z');

const row = (i: number) => ({
  org_id: `org_${i % 50}`,
  request_id: `req_${i.toString(36).padStart(8, '0')}`,
  model: MODELS[i % MODELS.length],
  provider: PROVIDERS[i % PROVIDERS.length],
  created_at: new Date(START + i * 25),
  input_tokens: 100 + (i % 900),
  output_tokens: 20 + (i % 400),
  cost_usd: `0.${String((i % 999_999) + 1).padStart(9, '0')}`,
  status: i % 97 === 0 ? 429 : 200,
});

/** Longest gap between 5 ms timer ticks while `work` runs: how long the event loop was blocked. */
const worstStall = async <T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> => {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    return { result: await work(), stallMs };
  } finally {
    clearInterval(timer);
  }
};

const GROUP_BY = (final: boolean) => `
  SELECT org_id, model, count() AS requests, sum(input_tokens + output_tokens) AS tokens, sum(cost_usd) AS cost
  FROM request_rows ${final ? 'FINAL' : ''}
  WHERE created_at >= {from:DateTime64(3)}
  GROUP BY org_id, model
  ORDER BY cost DESC`;

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-analytics-'));
try {
  const opened = await timed(() =>
    ChdbAnalyticsStore.open({ path: chdbPath(dir), database: 'bench', createDatabase: true }),
  );
  const store = opened.result;
  try {
    await store.command(`
      CREATE TABLE request_rows (
        org_id LowCardinality(String), request_id String, model LowCardinality(String),
        provider LowCardinality(String), created_at DateTime64(3, 'UTC'),
        input_tokens UInt32, output_tokens UInt32, cost_usd Decimal(18, 9), status UInt16
      ) ENGINE = ReplacingMergeTree ORDER BY (org_id, request_id)`);

    process.stdout.write(
      `inserting ${ROWS.toLocaleString('en-US')} rows in batches of ${BATCH.toLocaleString('en-US')}... `,
    );
    const inserted = await timed(async () => {
      for (let start = 0; start < ROWS; start += BATCH) {
        const n = Math.min(BATCH, ROWS - start);
        await store.insert(
          'request_rows',
          Array.from({ length: n }, (_, i) => row(start + i)),
        );
      }
    });
    console.log('done');

    const [count] = await store.query<{ n: string }>('SELECT count() AS n FROM request_rows');
    if (Number(count?.n) !== ROWS) throw new Error(`counted ${count?.n} rows, expected ${ROWS}`);

    const from = new Date(START);
    await store.query(GROUP_BY(false), { from }); // warm caches once, as a dashboard would
    const plain = await worstStall(() => timed(() => store.query(GROUP_BY(false), { from })));
    const final = await worstStall(() => timed(() => store.query(GROUP_BY(true), { from })));
    if (plain.result.result.length !== final.result.result.length)
      throw new Error('FINAL changed the groups');

    const ms = (s: number) => `${(s * 1000).toFixed(0)} ms`;
    const { version } = await store.health();
    printTable(`bench/analytics (chdb, ClickHouse ${version ?? '?'} in a worker thread)`, [
      { metric: 'engine start (worker + session)', measured: ms(opened.seconds) },
      {
        metric: `insert, JSONEachRow batches of ${BATCH.toLocaleString('en-US')}`,
        measured: perSecond(ROWS, inserted.seconds),
      },
      {
        metric: `group-by org x model over ${ROWS.toLocaleString('en-US')} rows`,
        measured: ms(plain.result.seconds),
      },
      { metric: 'same group-by with FINAL (dedupe)', measured: ms(final.result.seconds) },
      {
        metric: 'longest event-loop stall during the group-bys',
        measured: `${Math.max(plain.stallMs, final.stallMs).toFixed(1)} ms`,
      },
    ]);
  } finally {
    await store.close();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
