/**
 * Ingest cost: what the ingest role of `svc serve` (src/roles/ingest.ts) spends per request, with
 * wallet settlement as its hook, on the embedded default (Postgres-table bus + chdb) and on
 * JetStream (a private nats-server + chdb). Two shapes of load:
 *
 * - backlog: N request.completed envelopes published first (not timed), then the consumer drains
 *   them; the clock runs from its start until `count() FINAL` of the request rows reaches N.
 * - paced: the consumer runs first, and a child process publishes RATE requests a second for
 *   SECONDS seconds, each stamped with its publish time: the shape `npm start` under load delivers
 *   (small batches every flush interval). Lag is publish to committed (rows read back, so queryable).
 *
 * CPU is read from /proc and process.cpuUsage() (every thread of the ingest process, chdb's worker
 * included), per request, beside the 200 µs target; the PostgreSQL backends of the bench database
 * (the publisher's left out) and the private nats-server are shown apart. Each request carries inline
 * request and response bodies of BODY bytes (0: none, as without full tracing).
 *
 *   npm run bench:ingest                                   both adapters, both shapes
 *   npm run bench:ingest -- --only postgres|jetstream --mode backlog|paced
 *   npm run bench:ingest -- --count 20000 --rate 1000 --seconds 30 --body 2048 --funding wallet|byok
 *   npm run bench:ingest -- --cpu-prof /tmp/prof           a CPU profile of each ingest phase
 *
 * Every run uses its own database, streams and directories, removed afterwards.
 */
import { fork } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import { ChdbAnalyticsStore } from '../../src/analytics/chdb/store.js';
import { HttpAnalyticsStore } from '../../src/analytics/http/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import type { AnalyticsStore } from '../../src/analytics/port.js';
import { PostgresEscrow } from '../../src/commands/wallet/postgres-escrow.js';
import { settlement } from '../../src/commands/wallet/settlement.js';
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import type { Pool } from '../../src/events/postgres/pool.js';
import { filterToRegex } from '../../src/events/subjects.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { IngestConsumer, type IngestStats } from '../../src/projections/ingest/consumer.js';
import { ingestMetrics } from '../../src/projections/ingest/metrics.js';
import { privateNats } from '../../test/helpers/nats-server.js';
import { benchDatabase } from '../lib/database.js';
import { type BenchRow, printTable } from '../lib/report.js';
import { backendCpu, type CpuReading, cpuSince, processCpu, threadCpu, total } from './cpu.js';
import { type Funding, requestMessages } from './envelopes.js';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: process.env.BENCH_INGEST_COUNT ?? '20000' },
    body: { type: 'string', default: '2048' },
    only: { type: 'string' },
    mode: { type: 'string' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '30' },
    funding: { type: 'string', default: 'wallet' },
    analytics: { type: 'string', default: 'chdb' },
    'cpu-prof': { type: 'string' },
    // The consumer's defaults unless given, to try other batch shapes.
    'flush-rows': { type: 'string' },
    flushes: { type: 'string' },
    'flush-ms': { type: 'string' },
  },
});
const COUNT = Number(args.count);
const BODY = Number(args.body);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const FUNDING = args.funding as Funding;
if (FUNDING !== 'wallet' && FUNDING !== 'byok') throw new Error('--funding is wallet or byok');
const ANALYTICS = args.analytics;
if (ANALYTICS !== 'chdb' && ANALYTICS !== 'http') throw new Error('--analytics is chdb or http');
const MODES = args.mode ? [args.mode] : ['backlog', 'paced'];
const PUBLISH_BATCH = 250;
const PUBLISH_IN_FLIGHT = 8;
const CPU_TARGET_US = 200;
const LAG_TARGET_MS = 2_000;
const BENCH_CONSUMER = 'bench_ingest';
const INGEST_FILTER = 'svc.requests.>';
const PUBLISHER_APP = 'svc-bench-publisher';
const suffix = `${process.pid.toString(36)}${Date.now().toString(36)}`;

interface Outcome {
  label: string;
  requests: number;
  seconds: number;
  /** CPU time of this process (every thread, chdb's included) during the ingest phase. */
  cpuSeconds: number;
  /** The same by thread name: 'main' is the consumer's own JavaScript. */
  threads: [string, number][];
  /** PostgreSQL backends of the bench database (the publisher's left out), and nats-server. */
  postgresSeconds: number;
  natsSeconds: number | null;
  /** The HTTP test server's process (its chdb engine), with --analytics http. */
  engineSeconds: number | null;
  stats: IngestStats;
  suppressed: number;
  deadLetters: number;
  packs: number;
  lagMs: { p50: number; p99: number; max: number } | null;
}

/** Everything one adapter's runs share. */
interface Setup {
  adapter: string;
  bus: Bus;
  busKind: 'postgres' | 'nats';
  busUrl: string;
  store: AnalyticsStore;
  pool: Pool;
  database: string;
  natsDir: string | null;
  deadLetters(): Promise<number>;
}

const publishBacklog = async (bus: Bus, prefix: string): Promise<number> => {
  let next = 0;
  const started = performance.now();
  const shape = { body: BODY, funding: FUNDING, prefix };
  const at = new Date();
  const worker = async () => {
    while (next < COUNT) {
      const from = next;
      next += PUBLISH_BATCH;
      const batch: OutgoingMessage[] = [];
      for (let i = from; i < Math.min(COUNT, from + PUBLISH_BATCH); i++)
        batch.push(...requestMessages(shape, i, at));
      await bus.publishMany(batch);
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_IN_FLIGHT }, worker));
  return (performance.now() - started) / 1000;
};

/** Runs the paced publisher as a child process; resolves with how many it published. */
const publishPaced = (setup: Setup, prefix: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = fork(
      join(import.meta.dirname, 'publisher.ts'),
      [setup.busKind, setup.busUrl, String(RATE), String(SECONDS), String(BODY), FUNDING, prefix],
      { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    let published = -1;
    child.on('message', (m: { published: number }) => {
      published = m.published;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      published >= 0 ? resolve(published) : reject(new Error(`publisher exited with ${code}`)),
    );
  });

const count = async (store: AnalyticsStore, final: boolean): Promise<number> =>
  Number(
    (await store.query<{ n: string }>(`SELECT count() AS n FROM requests${final ? ' FINAL' : ''}`))[0]!.n,
  );

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

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const measure = async (setup: Setup, mode: string): Promise<Outcome> => {
  const prefix = `${suffix}_${mode}`;
  const label = `${setup.adapter}, ${mode}`;
  let expected = COUNT;
  if (mode === 'backlog') {
    process.stdout.write(`${label}: publishing ${COUNT.toLocaleString('en-US')} requests... `);
    const s = await publishBacklog(setup.bus, prefix);
    process.stdout.write(`${s.toFixed(1)} s; ingesting... `);
  } else {
    process.stdout.write(`${label}: ${RATE}/s for ${SECONDS} s... `);
  }
  const before = await count(setup.store, false);
  const objects = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-objects-'));
  const registry = new Registry();
  // The ingest role as `svc serve` composes it (src/roles/ingest.ts): settlement is its hook.
  const { settleRequest } = settlement({
    store: new PostgresEventStore(setup.pool, ''),
    holds: new PostgresEscrow(setup.pool),
  });
  const lags: number[] = [];
  const flushRows = args['flush-rows'] ? Number(args['flush-rows']) : undefined;
  const flushes = args.flushes ? Number(args.flushes) : undefined;
  const consumer = new IngestConsumer({
    bus: setup.bus,
    analytics: setup.store,
    objects: new FsObjectStore(objects),
    metrics: ingestMetrics(registry),
    consumerName: BENCH_CONSUMER,
    ...(flushRows ? { flushRows } : {}),
    ...(flushes ? { maxConcurrentFlushes: flushes } : {}),
    ...(flushRows || flushes ? { maxInFlight: (flushRows ?? 4_000) * ((flushes ?? 2) + 1) } : {}),
    ...(args['flush-ms'] ? { flushIntervalMs: Number(args['flush-ms']) } : {}),
    onRequestLogged: async (envelope) => {
      await settleRequest(envelope);
      lags.push(Date.now() - Date.parse(envelope.finished_at));
    },
    onError: (err, context) => process.stderr.write(`\n${context}: ${(err as Error).message}\n`),
  });
  const others = async (): Promise<[CpuReading, CpuReading, CpuReading]> => [
    await backendCpu(setup.pool, setup.database, PUBLISHER_APP),
    setup.natsDir ? await processCpu(setup.natsDir) : new Map(),
    engine ? await processCpu(engine.dir) : new Map(),
  ];
  const stopProfile = profileIngest(`${setup.busKind}-${mode}`);
  const [pgBefore, natsBefore, engineBefore] = await others();
  const threadsBefore = await threadCpu();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await consumer.start();
  if (mode === 'paced') expected = await publishPaced(setup, prefix);
  // The consumer's own count first: it commits a request only after reading its rows back, and
  // polling the engine meanwhile would queue behind the inserts on the one chdb worker.
  while (consumer.stats().committed < expected) await new Promise((r) => setTimeout(r, 50));
  while (
    (await count(setup.store, false)) < before + expected ||
    (await count(setup.store, true)) < before + expected
  )
    await new Promise((r) => setTimeout(r, 100));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const threads = cpuSince(threadsBefore, await threadCpu());
  const [pgAfter, natsAfter, engineAfter] = await others();
  await stopProfile();
  process.stdout.write(`${seconds.toFixed(1)} s\n`);
  await consumer.stop();
  const metric = async (name: string) =>
    ((await registry.getSingleMetric(name)?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);
  lags.sort((a, b) => a - b);
  const outcome: Outcome = {
    label,
    requests: expected,
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    threads,
    postgresSeconds: total(cpuSince(pgBefore, pgAfter)),
    natsSeconds: setup.natsDir ? total(cpuSince(natsBefore, natsAfter)) : null,
    engineSeconds: engine ? total(cpuSince(engineBefore, engineAfter)) : null,
    stats: consumer.stats(),
    suppressed: await metric('svc_ingest_clickhouse_suppressed_writes_total'),
    packs: await metric('svc_ingest_body_packs_total'),
    deadLetters: await setup.deadLetters(),
    lagMs:
      mode === 'paced'
        ? { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags.at(-1) ?? 0 }
        : null,
  };
  await rm(objects, { recursive: true, force: true });
  return outcome;
};

const chdbDir = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-chdb-'));

/** With --analytics http, the HTTP test server in a child process over its own chdb directory. */
const startEngine = async (): Promise<{ url: string; dir: string; stop(): Promise<void> } | null> => {
  if (ANALYTICS !== 'http') return null;
  const child = fork(join(import.meta.dirname, 'clickhouse-server.ts'), [chdbDir], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve(m.url));
    child.once('exit', (code) => reject(new Error(`ClickHouse test server exited with ${code}`)));
  });
  return {
    url,
    dir: chdbDir,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
};
const engine = await startEngine();
const admin: AnalyticsStore = engine
  ? await HttpAnalyticsStore.open({ url: engine.url })
  : await ChdbAnalyticsStore.open({ path: chdbDir });
const openStore = async (database: string): Promise<AnalyticsStore> => {
  const store = engine
    ? await HttpAnalyticsStore.open({ url: engine.url, database, createDatabase: true })
    : await ChdbAnalyticsStore.open({ path: chdbDir, database, createDatabase: true });
  await migrateClickHouse(store);
  return store;
};

const runAll = async (setup: Setup): Promise<Outcome[]> => {
  const outcomes: Outcome[] = [];
  await setup.bus.ensureStreams();
  for (const mode of MODES) outcomes.push(await measure(setup, mode));
  return outcomes;
};

const embedded = async (): Promise<Outcome[]> => {
  const db = await benchDatabase('ingest');
  const bus = new PostgresBus(db.pool, { connectionString: db.url });
  const store = await openStore('bench_pg');
  // The durable consumer exists before the backlog is published, as in production: each publish
  // then fans its delivery row out, rather than the consumer's creation copying the backlog
  // inside the timed window.
  await db.pool.query('SELECT svc_bus_create_consumer($1, $2, $3)', [
    BENCH_CONSUMER,
    INGEST_FILTER,
    filterToRegex(INGEST_FILTER),
  ]);
  try {
    return await runAll({
      adapter: `Postgres bus + ${ANALYTICS === 'http' ? 'ClickHouse HTTP' : 'chdb (embedded default)'}`,
      bus,
      busKind: 'postgres',
      busUrl: db.url,
      store,
      pool: db.pool,
      database: new URL(db.url).pathname.slice(1),
      natsDir: null,
      deadLetters: async () =>
        Number(
          (
            await db.pool.query<{ n: string }>(
              "SELECT count(*) AS n FROM svc_bus_messages WHERE stream = 'dlq'",
            )
          ).rows[0]!.n,
        ),
    });
  } finally {
    await bus.close();
    await store.close();
    await db.drop();
  }
};

const jetstream = async (): Promise<Outcome[]> => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-ingest-nats-'));
  const nats = await privateNats(dir);
  const bus = new NatsBus({ servers: nats.url, connectionName: 'bench-ingest' });
  const store = await openStore('bench_js');
  // Settlement's event store and holds stay on PostgreSQL, as in the scale-out deployment.
  const db = await benchDatabase('ingest_js');
  try {
    await bus.ensureStreams();
    return await runAll({
      adapter: `JetStream + ${ANALYTICS === 'http' ? 'ClickHouse HTTP' : 'chdb'}`,
      bus,
      busKind: 'nats',
      busUrl: nats.url,
      store,
      pool: db.pool,
      database: new URL(db.url).pathname.slice(1),
      natsDir: dir,
      deadLetters: async () => {
        const jsm = await (await bus.connection()).jetstreamManager();
        return (await jsm.streams.info('SVC_DLQ')).state.messages;
      },
    });
  } finally {
    await bus.close();
    await store.close();
    await nats.stop();
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  }
};

const outcomes: Outcome[] = [];
try {
  if (args.only !== 'jetstream') outcomes.push(...(await embedded()));
  if (args.only !== 'postgres') outcomes.push(...(await jetstream()));
} finally {
  await admin.close();
  await engine?.stop();
  await rm(chdbDir, { recursive: true, force: true });
}

const us = (seconds: number, n: number) => Math.round((seconds * 1e6) / n);
const rows: BenchRow[] = outcomes.flatMap((o) => {
  const t = o.stats.timings;
  const share = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const perRequest = us(o.cpuSeconds, o.requests);
  const rows: BenchRow[] = [
    {
      metric: `${o.label}: requests, seconds until all queryable, rate`,
      measured: `${o.requests.toLocaleString('en-US')}, ${o.seconds.toFixed(1)} s, ${Math.round(o.requests / o.seconds).toLocaleString('en-US')}/s`,
    },
    {
      metric: `${o.label}: CPU of the ingest process (all threads) per request`,
      measured: `${o.cpuSeconds.toFixed(1)} s, ${perRequest} µs`,
      target: `<= ${CPU_TARGET_US} µs`,
      met: perRequest <= CPU_TARGET_US,
    },
    {
      metric: `${o.label}: of which by thread (main: the consumer), per request`,
      measured: o.threads
        .slice(0, 5)
        .map(([name, s]) => `${name} ${us(s, o.requests)} µs`)
        .join(', '),
    },
    ...(o.engineSeconds === null
      ? []
      : [
          {
            metric: `${o.label}: the HTTP test server (chdb engine) per request (apart)`,
            measured: `${us(o.engineSeconds, o.requests)} µs`,
          },
        ]),
    {
      metric: `${o.label}: PostgreSQL backends${o.natsSeconds === null ? '' : ' / nats-server'} per request (apart)`,
      measured: `${us(o.postgresSeconds, o.requests)} µs${o.natsSeconds === null ? '' : ` / ${us(o.natsSeconds, o.requests)} µs`}`,
    },
  ];
  if (o.lagMs)
    rows.push({
      metric: `${o.label}: lag publish to queryable p50 / p99 / max`,
      measured: `${o.lagMs.p50} / ${o.lagMs.p99} / ${o.lagMs.max} ms`,
      target: `< ${LAG_TARGET_MS} ms`,
      met: o.lagMs.max < LAG_TARGET_MS,
    });
  rows.push(
    {
      metric: `${o.label}: flush time in pack / insert / read-back / audit, summed`,
      measured: `${share(t.packMs)} / ${share(t.insertMs)} / ${share(t.readBackMs)} / ${share(t.auditMs)}`,
    },
    {
      metric: `${o.label}: flushes, packs, left unacked, dead letters`,
      measured: `${o.stats.flushes}, ${o.packs}, ${o.stats.leftUnacked}, ${o.deadLetters}`,
    },
    {
      metric: `${o.label}: suppressed writes`,
      measured: String(o.suppressed),
      target: '0',
      met: o.suppressed === 0,
    },
  );
  return rows;
});
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
printTable(
  `Ingest with wallet settlement (${FUNDING}-funded requests): backlog of ${COUNT.toLocaleString('en-US')}, ` +
    `paced ${RATE}/s for ${SECONDS} s; inline request and response bodies of ${BODY} bytes each ` +
    `(${cpus().length} CPUs, load average ${load} at the end)`,
  rows,
);
