/**
 * Ingest throughput: publish N request.completed envelopes, each with an
 * inline request body and an inline response body of BODY bytes, onto the bus; then start the
 * ingest consumer on the backlog and time until every request row is queryable (count() FINAL = N)
 * in chdb. Runs for the embedded default (Postgres-table bus + chdb) and for JetStream (a private
 * nats-server + chdb). Every run uses its own database, streams and directories, removed afterwards.
 *
 *   npm run bench:ingest                          50,000 envelopes, 2 KB bodies (BENCH_INGEST_COUNT)
 *   npm run bench:ingest -- --count 100000 --body 2048 --only postgres|jetstream
 *   npm run bench:ingest -- --cpu-prof /tmp/prof    a CPU profile of the ingest phase only, per adapter
 *
 * The backlog is published with publishMany in batches (not timed against the target); the clock
 * runs from the consumer's start until `count() FINAL` of the request rows reaches N. The engine is
 * asked only once the consumer has committed N requests (each read back after its insert), so the
 * measurement does not compete with the inserts for the single chdb worker.
 *
 * The default is 50,000 rather than the 100,000 so a run stays near four minutes on the
 * two-core development machine; pass --count 100000 for the figure.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import { ChdbAnalyticsStore } from '../../src/analytics/chdb/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { buildRequestRecord } from '../../src/events/envelopes/record.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { filterToRegex } from '../../src/events/subjects.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { IngestConsumer, type IngestStats } from '../../src/projections/ingest/consumer.js';
import { ingestMetrics } from '../../src/projections/ingest/metrics.js';
import { sampleDraft } from '../../test/fixtures/envelopes/envelopes.fixtures.js';
import { privateNats } from '../../test/helpers/nats-server.js';
import { benchDatabase } from '../lib/database.js';
import { parseProcStat } from '../lib/proc.js';
import { type BenchRow, printTable } from '../lib/report.js';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: process.env.BENCH_INGEST_COUNT ?? '50000' },
    body: { type: 'string', default: '2048' },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
    // The consumer's defaults unless given, to try other batch shapes.
    'flush-rows': { type: 'string' },
    flushes: { type: 'string' },
  },
});
const COUNT = Number(args.count);
const BODY = Number(args.body);
const PUBLISH_BATCH = 250;
const PUBLISH_IN_FLIGHT = 8;
const TARGET = 10_000;
const BENCH_CONSUMER = 'bench_ingest';
const INGEST_FILTER = 'svc.requests.>';
const suffix = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/**
 * CPU seconds used so far by each thread of this process: the main thread under 'main', the
 * others under their names (V8's GC and compiler workers, libuv, chdb's engine pools).
 */
const threadCpu = async (): Promise<Map<string, number>> => {
  const byName = new Map<string, number>();
  for (const tid of await readdir('/proc/self/task')) {
    const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue; // the thread ended since the listing
    const { name, cpuSeconds } = parseProcStat(stat);
    const key = tid === String(process.pid) ? 'main' : name;
    byName.set(key, (byName.get(key) ?? 0) + cpuSeconds);
  }
  return byName;
};

/** CPU seconds by thread name between two readings, largest first. */
const cpuSince = (before: Map<string, number>, after: Map<string, number>): [string, number][] =>
  [...after]
    .map(([name, s]): [string, number] => [name, s - (before.get(name) ?? 0)])
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1]);

interface Outcome {
  adapter: string;
  publishSeconds: number;
  ingestSeconds: number;
  /** CPU time of this process (every thread, chdb's included) during the ingest phase. */
  cpuSeconds: number;
  /** The same by thread name: 'main' is the consumer's own JavaScript. */
  threads: [string, number][];
  stats: IngestStats;
  suppressed: number;
  deadLetters: number;
  packs: number;
}

/** Text bodies of exactly BODY bytes, different per request so nothing can be shared. */
const body = (i: number, side: string) => {
  const text = `{"${side}":${i},"data":"${randomBytes(BODY).toString('base64')}`;
  return `${text.slice(0, BODY - 2)}"}`;
};

const publishAll = async (bus: Bus): Promise<number> => {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < COUNT) {
      const from = next;
      next += PUBLISH_BATCH;
      let i = from;
      const batch: OutgoingMessage[] = [];
      for (; i < Math.min(COUNT, from + PUBLISH_BATCH); i++) {
        const draft = sampleDraft({
          request_id: `req_${suffix}_${i}`,
          org_id: `org_${i % 16}`,
          workspace_id: `wsp_${i % 16}`,
          finished_at: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 10).toISOString(),
        });
        const { record } = buildRequestRecord(draft, { request: body(i, 'q'), response: body(i, 'a') });
        batch.push(...record.messages);
      }
      await bus.publishMany(batch);
      if (Math.floor(i / 20_000) > Math.floor(from / 20_000)) process.stdout.write(`${i} `);
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_IN_FLIGHT }, worker));
  return (performance.now() - started) / 1000;
};

const count = async (store: ChdbAnalyticsStore, final: boolean): Promise<number> =>
  Number(
    (await store.query<{ n: string }>(`SELECT count() AS n FROM requests${final ? ' FINAL' : ''}`))[0]!.n,
  );

/** Plain count() >= N is necessary for count() FINAL = N, and costs the engine almost nothing. */
const allQueryable = async (store: ChdbAnalyticsStore): Promise<boolean> =>
  (await count(store, false)) >= COUNT && (await count(store, true)) >= COUNT;

/** The inspector of this thread: samples the ingest phase only, not the backlog's publishing. */
const profileIngest = (label: string): (() => Promise<void>) => {
  const dir = args['cpu-prof'];
  if (!dir) return async () => {};
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  return async () => {
    const profile = await new Promise<unknown>((resolve, reject) =>
      session.post('Profiler.stop', (err, result) => (err ? reject(err) : resolve(result.profile))),
    );
    await mkdir(dir, { recursive: true });
    const file = join(dir, `ingest-${label}-${Date.now()}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
    process.stdout.write(`(profile ${file}) `);
  };
};

const measure = async (
  adapter: string,
  bus: Bus,
  store: ChdbAnalyticsStore,
  deadLetters: () => Promise<number>,
): Promise<Outcome> => {
  await bus.ensureStreams();
  process.stdout.write(`${adapter}: publishing ${COUNT.toLocaleString('en-US')} envelopes... `);
  const publishSeconds = await publishAll(bus);
  process.stdout.write(`${publishSeconds.toFixed(1)} s; ingesting... `);
  const objects = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-objects-'));
  const registry = new Registry();
  const consumer = new IngestConsumer({
    bus,
    analytics: store,
    objects: new FsObjectStore(objects),
    metrics: ingestMetrics(registry),
    consumerName: BENCH_CONSUMER,
    ...(args['flush-rows'] ? { flushRows: Number(args['flush-rows']) } : {}),
    ...(args.flushes ? { maxConcurrentFlushes: Number(args.flushes) } : {}),
    ...(args['flush-rows'] || args.flushes
      ? {
          maxInFlight: Number(args['flush-rows'] ?? 4_000) * (Number(args.flushes ?? 2) + 1),
        }
      : {}),
    onError: (err, context) => process.stderr.write(`\n${context}: ${(err as Error).message}\n`),
  });
  const stopProfile = profileIngest(bus.adapter);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const threadsBefore = await threadCpu();
  await consumer.start();
  // The consumer's own count first: it commits a request only after reading its rows back, and
  // polling the engine meanwhile would queue behind the inserts on the one chdb worker (a plain
  // count() every 100 ms took a fifth of that worker's time on the loaded machine).
  while (consumer.stats().committed < COUNT) await new Promise((r) => setTimeout(r, 50));
  while (!(await allQueryable(store))) await new Promise((r) => setTimeout(r, 100));
  const ingestSeconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const threads = cpuSince(threadsBefore, await threadCpu());
  await stopProfile();
  process.stdout.write(`${ingestSeconds.toFixed(1)} s\n`);
  await consumer.stop();
  const metric = async (name: string) =>
    ((await registry.getSingleMetric(name)?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);
  const outcome = {
    adapter,
    publishSeconds,
    ingestSeconds,
    cpuSeconds,
    threads,
    stats: consumer.stats(),
    suppressed: await metric('svc_ingest_clickhouse_suppressed_writes_total'),
    packs: await metric('svc_ingest_body_packs_total'),
    deadLetters: await deadLetters(),
  };
  await rm(objects, { recursive: true, force: true });
  return outcome;
};

const chdbDir = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-chdb-'));
const admin = await ChdbAnalyticsStore.open({ path: chdbDir });
const openStore = async (database: string) => {
  const store = await ChdbAnalyticsStore.open({ path: chdbDir, database, createDatabase: true });
  await migrateClickHouse(store);
  return store;
};

const embedded = async (): Promise<Outcome> => {
  const db = await benchDatabase('ingest');
  const bus = new PostgresBus(db.pool, { connectionString: db.url });
  const store = await openStore('bench_pg');
  // The durable consumer exists before the backlog is published, as in production: each publish
  // then fans its delivery row out, rather than the consumer's creation copying 100,000 rows
  // inside the timed window.
  await db.pool.query('SELECT svc_bus_create_consumer($1, $2, $3)', [
    BENCH_CONSUMER,
    INGEST_FILTER,
    filterToRegex(INGEST_FILTER),
  ]);
  try {
    return await measure('Postgres bus + chdb (embedded default)', bus, store, async () =>
      Number(
        (
          await db.pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM svc_bus_messages WHERE stream = 'dlq'",
          )
        ).rows[0]!.n,
      ),
    );
  } finally {
    await bus.close();
    await store.close();
    await db.drop();
  }
};

const jetstream = async (): Promise<Outcome> => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-nats-'));
  const nats = await privateNats(dir);
  const bus = new NatsBus({ servers: nats.url, connectionName: 'bench-ingest' });
  const store = await openStore('bench_js');
  try {
    return await measure('JetStream + chdb', bus, store, async () => {
      const jsm = await (await bus.connection()).jetstreamManager();
      return (await jsm.streams.info('SVC_DLQ')).state.messages;
    });
  } finally {
    await bus.close();
    await store.close();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
};

const outcomes: Outcome[] = [];
try {
  if (args.only !== 'jetstream') outcomes.push(await embedded());
  if (args.only !== 'postgres') outcomes.push(await jetstream());
} finally {
  await admin.close();
  await rm(chdbDir, { recursive: true, force: true });
}

const rows: BenchRow[] = outcomes.flatMap((o) => {
  const rate = COUNT / o.ingestSeconds;
  const t = o.stats.timings;
  const share = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [
    {
      metric: `${o.adapter}: publish`,
      measured: `${o.publishSeconds.toFixed(1)} s (${Math.round(COUNT / o.publishSeconds).toLocaleString('en-US')}/s)`,
    },
    { metric: `${o.adapter}: seconds until all queryable`, measured: `${o.ingestSeconds.toFixed(1)} s` },
    {
      metric: `${o.adapter}: requests/s ingested`,
      measured: `${Math.round(rate).toLocaleString('en-US')}/s`,
      target: `>= ${TARGET.toLocaleString('en-US')}/s`,
      met: rate >= TARGET,
    },
    {
      metric: `${o.adapter}: CPU of the ingest process (all threads) per request`,
      measured: `${o.cpuSeconds.toFixed(1)} s, ${Math.round((o.cpuSeconds * 1e6) / COUNT)} µs`,
    },
    {
      metric: `${o.adapter}: of which by thread (main: the consumer), per request`,
      measured: o.threads
        .slice(0, 5)
        .map(([name, s]) => `${name} ${Math.round((s * 1e6) / COUNT)} µs`)
        .join(', '),
    },
    {
      metric: `${o.adapter}: flush time in pack / insert / read-back / audit, summed over flushes`,
      measured: `${share(t.packMs)} / ${share(t.insertMs)} / ${share(t.readBackMs)} / ${share(t.auditMs)}`,
    },
    {
      metric: `${o.adapter}: flushes, packs, left unacked, dead letters`,
      measured: `${o.stats.flushes}, ${o.packs}, ${o.stats.leftUnacked}, ${o.deadLetters}`,
    },
    {
      metric: `${o.adapter}: suppressed writes`,
      measured: String(o.suppressed),
      target: '0',
      met: o.suppressed === 0,
    },
  ];
});
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
printTable(
  `Ingest: ${COUNT.toLocaleString('en-US')} envelopes, inline request and response bodies of ${BODY} bytes each ` +
    `(${cpus().length} CPUs, load average ${load} at the end)`,
  rows,
);
