/**
 * Bus throughput (batch publish, SPEC 6): publish msgs/s with awaited acks
 * and 256 single publishes in flight, then the same count again with publishMany (batches of
 * BENCH_BUS_BATCH, 4 batches in flight), then consume msgs/s of both sets for one durable consumer
 * acking each message, on JetStream and on the Postgres table. Each adapter gets its own streams
 * or database and removes them afterwards.
 *
 *   npm run bench:bus    BENCH_BUS_MESSAGES (default 20000), BENCH_BUS_PAYLOAD bytes (512),
 *                        BENCH_BUS_BATCH messages per publishMany (256)
 */
import pg from 'pg';
import type { Bus } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { migratePostgres } from '../../src/events/postgres/migrate.js';
import { createPool } from '../../src/events/postgres/pool.js';
import { subjects } from '../../src/events/subjects.js';

const NATS_URL = process.env.SVC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const DATABASE_URL = process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MESSAGES = Number(process.env.BENCH_BUS_MESSAGES ?? 20_000);
const PAYLOAD = Number(process.env.BENCH_BUS_PAYLOAD ?? 512);
const IN_FLIGHT = 256;
const BATCH = Number(process.env.BENCH_BUS_BATCH ?? 256);
const BATCHES_IN_FLIGHT = 4;
const suffix = `${process.pid.toString(36)}_${Date.now().toString(36)}`;

interface Result {
  adapter: string;
  publishPerSec?: number;
  batchPublishPerSec?: number;
  consumePerSec?: number;
  duplicates?: number;
  error?: string;
}

const payload = new TextEncoder().encode('x'.repeat(PAYLOAD));

const publishAll = async (bus: Bus): Promise<number> => {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < MESSAGES) {
      const i = next++;
      // 64 organisations, one request each per message: many subjects, as in production.
      await bus.publish(subjects.request(`org${i % 64}`, `req${i}`), payload, {
        messageId: `bench-${suffix}-${i}`,
      });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return MESSAGES / ((performance.now() - started) / 1000);
};

const publishBatched = async (bus: Bus): Promise<number> => {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < MESSAGES) {
      const from = next;
      next += BATCH;
      const batch = [];
      for (let i = from; i < Math.min(MESSAGES, from + BATCH); i++)
        batch.push({
          subject: subjects.request(`org${i % 64}`, `breq${i}`),
          data: payload,
          messageId: `bench-batch-${suffix}-${i}`,
        });
      await bus.publishMany(batch);
    }
  };
  await Promise.all(Array.from({ length: BATCHES_IN_FLIGHT }, worker));
  return MESSAGES / ((performance.now() - started) / 1000);
};

const consumeAll = async (bus: Bus): Promise<{ perSec: number; duplicates: number }> => {
  const seen = new Set<number>();
  let deliveries = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const acks: Promise<void>[] = [];
  const started = performance.now();
  const handle = await bus.consume(
    'bench',
    'svc.requests.>',
    async (m) => {
      deliveries++;
      seen.add(m.seq);
      // Not awaited: the adapter may batch acks, and the handler is free to move on.
      acks.push(m.ack());
      if (seen.size === 2 * MESSAGES) done();
    },
    { ackWaitMs: 30_000, maxDeliveries: 5, batchSize: 256, maxInFlight: 1024 },
  );
  await finished;
  await Promise.all(acks);
  const perSec = (2 * MESSAGES) / ((performance.now() - started) / 1000);
  await handle.close();
  return { perSec, duplicates: deliveries - seen.size };
};

const measure = async (adapter: string, bus: Bus): Promise<Result> => {
  await bus.ensureStreams();
  process.stdout.write(`${adapter}: publishing ${MESSAGES} messages... `);
  const publishPerSec = await publishAll(bus);
  process.stdout.write(`${Math.round(publishPerSec)}/s; in batches of ${BATCH}... `);
  const batchPublishPerSec = await publishBatched(bus);
  process.stdout.write(`${Math.round(batchPublishPerSec)}/s; consuming both... `);
  const { perSec, duplicates } = await consumeAll(bus);
  process.stdout.write(`${Math.round(perSec)}/s\n`);
  return { adapter, publishPerSec, batchPublishPerSec, consumePerSec: perSec, duplicates };
};

const benchNats = async (): Promise<Result> => {
  const bus = new NatsBus({
    servers: NATS_URL,
    subjectPrefix: `bench_${suffix}`,
    streamNamePrefix: `BENCH_${suffix}_`,
  });
  try {
    return await measure('NATS JetStream', bus);
  } catch (err) {
    return { adapter: 'NATS JetStream', error: (err as Error).message };
  } finally {
    await bus.deleteStreams().catch(() => {});
    await bus.close();
  }
};

const adminQuery = async (sql: string) => {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
};

const benchPostgres = async (): Promise<Result> => {
  const name = `svc_bench_bus_${suffix}`;
  const url = new URL(DATABASE_URL);
  url.pathname = `/${name}`;
  try {
    await adminQuery(`CREATE DATABASE ${name}`);
  } catch (err) {
    return { adapter: 'Postgres table', error: (err as Error).message };
  }
  const pool = createPool(url.toString(), { max: 32, application: 'svc-bench' });
  const bus = new PostgresBus(pool, { connectionString: url.toString() });
  try {
    await migratePostgres(pool);
    return await measure('Postgres table', bus);
  } catch (err) {
    return { adapter: 'Postgres table', error: (err as Error).message };
  } finally {
    await bus.close();
    await pool.end().catch(() => {});
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
};

const cell = (v: number | undefined) => (v === undefined ? '-' : Math.round(v).toLocaleString('en-US'));

const results = [await benchNats(), await benchPostgres()];
console.log(
  `\n${MESSAGES} messages of ${PAYLOAD} bytes, twice: single publishes with awaited acks (${IN_FLIGHT} in flight), ` +
    `then publishMany in batches of ${BATCH} (${BATCHES_IN_FLIGHT} in flight); consume reads both sets\n`,
);
const rows = [
  ['adapter', 'publish msgs/s', `publishMany(${BATCH}) msgs/s`, 'consume msgs/s', 'redeliveries'],
  ...results.map((r) =>
    r.error
      ? [r.adapter, `failed: ${r.error}`, '', '', '']
      : [
          r.adapter,
          cell(r.publishPerSec),
          cell(r.batchPublishPerSec),
          cell(r.consumePerSec),
          String(r.duplicates ?? 0),
        ],
  ),
];
const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
for (const [i, r] of rows.entries()) {
  console.log(r.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  '));
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
process.exitCode = results.some((r) => r.error) ? 1 : 0;
