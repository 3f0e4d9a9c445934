import { writeFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { ChdbAnalyticsStore } from '../analytics/chdb/store.js';
import { migrateClickHouse } from '../analytics/migrate.js';
import type { AnalyticsStore } from '../analytics/port.js';
import { PostgresBus } from '../events/postgres/bus.js';
import { createPool } from '../events/postgres/pool.js';
import { FsObjectStore } from '../objects/fs-store.js';
import { IngestConsumer } from './consumer.js';
import { ingestMetrics } from './metrics.js';

/**
 * A separate ingest process for ingest-kill.int.test.ts. With KILL_AFTER_INSERTS=n it SIGKILLs
 * itself the moment its n-th insert into `requests` resolves: rows committed, body pack written,
 * nothing read back, audited or acked. Otherwise it runs until every expected row is stored and
 * every delivery settled, then prints its stats and the request ids it logged, and exits.
 */

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const killAfter = Number(process.env.KILL_AFTER_INSERTS ?? 0);
const expected = Number(env('EXPECT_ROWS'));
const consumerName = env('CONSUMER');
const pool = createPool(env('DATABASE_URL'), { max: 10, application: 'svc-ingest-kill-test' });
const bus = new PostgresBus(pool, {
  connectionString: env('DATABASE_URL'),
  subjectPrefix: env('PREFIX'),
  pollMs: 100,
});
const store = await ChdbAnalyticsStore.open({
  path: env('CHDB_PATH'),
  database: 'svc',
  createDatabase: true,
});
await migrateClickHouse(store);

let requestInserts = 0;
const analytics: AnalyticsStore = {
  adapter: store.adapter,
  database: store.database,
  insert: async (table, rows) => {
    await store.insert(table, rows);
    if (table !== 'requests' || ++requestInserts !== killAfter) return;
    writeFileSync(env('KILLED_BATCH_FILE'), JSON.stringify(rows.map((r) => r.request_id)));
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {});
  },
  query: (sql, params) => store.query(sql, params),
  command: (sql, params) => store.command(sql, params),
  health: () => store.health(),
  close: () => store.close(),
};

const registry = new Registry();
const logged = new Set<string>();
const consumer = new IngestConsumer({
  bus,
  analytics,
  objects: new FsObjectStore(env('OBJECTS_ROOT')),
  metrics: ingestMetrics(registry),
  consumerName,
  ackWaitMs: 2_000,
  maxDeliveries: 20,
  flushRows: 100,
  flushIntervalMs: 20,
  fetchBatch: 100,
  maxInFlight: 400,
  onRequestLogged: (e) => {
    logged.add(e.request_id);
  },
});
await consumer.start();

const done = async (): Promise<boolean> => {
  const [row] = await store.query<{ n: string }>('SELECT count() AS n FROM requests FINAL');
  if (Number(row?.n) < expected) return false;
  const { rows } = await pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM svc_bus_deliveries WHERE consumer = $1',
    [consumerName],
  );
  return Number(rows[0]?.n) === 0;
};
while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 100));
await consumer.stop();
await bus.close();
await store.close();
await pool.end();
const suppressed =
  (await registry.getSingleMetric('svc_ingest_clickhouse_suppressed_writes_total')?.get())?.values ?? [];
process.stdout.write(
  `${JSON.stringify({
    stats: consumer.stats(),
    logged: [...logged],
    suppressed: suppressed.reduce((n, v) => n + v.value, 0),
  })}\n`,
);
