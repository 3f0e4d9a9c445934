/**
 * One ingest process of bench/ingest/scale.ts: the ingest role's consumer (settlement as its hook)
 * on a shared durable consumer, writing through the HTTP ClickHouse adapter. Reports
 * `{ committed, cpuSeconds }` on the IPC channel every 200 ms; stops on a 'stop' message.
 *
 *   node --import tsx bench/ingest/scale-worker.ts <postgres|nats> <bus url> <clickhouse url> <database> <postgres url>
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { HttpAnalyticsStore } from '../../src/analytics/http/store.js';
import { PostgresEscrow } from '../../src/commands/wallet/postgres-escrow.js';
import { settlement } from '../../src/commands/wallet/settlement.js';
import type { Bus } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { createPool } from '../../src/events/postgres/pool.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { IngestConsumer } from '../../src/projections/ingest/consumer.js';
import { ingestMetrics } from '../../src/projections/ingest/metrics.js';

const [kind, busUrl, clickhouseUrl, database, postgresUrl] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const pool = createPool(postgresUrl, { max: 8, application: 'svc-bench-scale' });
const bus: Bus =
  kind === 'postgres'
    ? new PostgresBus(pool, { connectionString: busUrl })
    : new NatsBus({ servers: busUrl, connectionName: 'bench-ingest-scale' });
const analytics = await HttpAnalyticsStore.open({ url: clickhouseUrl, database });
const objects = await mkdtemp(join(tmpdir(), 'svc-bench-scale-objects-'));
const { settleRequest } = settlement({
  store: new PostgresEventStore(pool, ''),
  holds: new PostgresEscrow(pool),
});
const consumer = new IngestConsumer({
  bus,
  analytics,
  objects: new FsObjectStore(objects),
  metrics: ingestMetrics(new Registry()),
  consumerName: 'bench_scale',
  onRequestLogged: async (e) => {
    await settleRequest(e);
  },
  onError: (err, context) => process.stderr.write(`${context}: ${(err as Error).message}\n`),
});
const cpuBefore = process.cpuUsage();
const report = () => {
  const cpu = process.cpuUsage(cpuBefore);
  process.send?.({ committed: consumer.stats().committed, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
};
await consumer.start();
const timer = setInterval(report, 200);
process.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  void (async () => {
    report();
    await consumer.stop();
    await bus.close();
    await analytics.close();
    await pool.end();
    await rm(objects, { recursive: true, force: true });
    process.disconnect?.();
  })();
});
