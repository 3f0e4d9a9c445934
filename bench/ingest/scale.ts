/**
 * One ingest process against two on one durable consumer (JetStream's, or the Postgres-table bus's,
 * whose leases skip rows another process holds): a backlog of COUNT requests drained by 1 and then
 * by 2 processes, each running the ingest role's consumer with settlement. chdb binds its data
 * directory to one process, so two processes cannot share one embedded engine; both write through
 * the HTTP ClickHouse adapter to the chdb-backed test server in its own process instead (a stand-in
 * for a ClickHouse server, which does not install here). On a 2-core machine the two ingest
 * processes, the engine, PostgreSQL and the bus share the same two cores, so this shows how far the
 * work divides, not what more cores would give.
 *
 *   node --import tsx bench/ingest/scale.ts [--bus nats|postgres] [--count 10000] [--body 2048]
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { HttpAnalyticsStore } from '../../src/analytics/http/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { filterToRegex } from '../../src/events/subjects.js';
import { privateNats } from '../../test/helpers/nats-server.js';
import { benchDatabase } from '../lib/database.js';
import { type BenchRow, printTable } from '../lib/report.js';
import { cpuSince, processCpu, total } from './cpu.js';
import { requestMessages } from './envelopes.js';

const { values: args } = parseArgs({
  options: {
    bus: { type: 'string', default: 'nats' },
    count: { type: 'string', default: '10000' },
    body: { type: 'string', default: '2048' },
  },
});
const COUNT = Number(args.count);
const BODY = Number(args.body);
const KIND = args.bus === 'postgres' ? 'postgres' : 'nats';
const suffix = `${process.pid.toString(36)}${Date.now().toString(36)}`;

const chdbDir = await mkdtemp(join(tmpdir(), 'svc-bench-scale-chdb-'));
const server = fork(join(import.meta.dirname, 'clickhouse-server.ts'), [chdbDir], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const clickhouseUrl = await new Promise<string>((resolve, reject) => {
  server.once('message', (m: { url: string }) => resolve(m.url));
  server.once('exit', (code) => reject(new Error(`ClickHouse test server exited with ${code}`)));
});
const store = await HttpAnalyticsStore.open({
  url: clickhouseUrl,
  database: 'bench_scale',
  createDatabase: true,
});
await migrateClickHouse(store);
const db = await benchDatabase('scale');
const natsDir = KIND === 'nats' ? await mkdtemp(join(tmpdir(), 'svc-bench-scale-nats-')) : null;
const nats = natsDir ? await privateNats(natsDir) : null;
const bus: Bus = nats
  ? new NatsBus({ servers: nats.url, connectionName: 'bench-scale' })
  : new PostgresBus(db.pool, {});
const busUrl = nats ? nats.url : db.url;
await bus.ensureStreams();
if (KIND === 'postgres')
  await db.pool.query('SELECT svc_bus_create_consumer($1, $2, $3)', [
    'bench_scale',
    'svc.requests.>',
    filterToRegex('svc.requests.>'),
  ]);

const publish = async (prefix: string) => {
  const shape = { body: BODY, funding: 'wallet' as const, prefix };
  const at = new Date();
  for (let from = 0; from < COUNT; from += 250) {
    const batch: OutgoingMessage[] = [];
    for (let i = from; i < Math.min(COUNT, from + 250); i++) batch.push(...requestMessages(shape, i, at));
    await bus.publishMany(batch);
  }
};

interface Run {
  processes: number;
  seconds: number;
  ingestCpu: number;
  engineCpu: number;
}

const drain = async (processes: number): Promise<Run> => {
  process.stdout.write(`${processes} process(es): publishing ${COUNT} requests... `);
  await publish(`${suffix}_${processes}`);
  process.stdout.write('draining... ');
  const engineBefore = await processCpu(chdbDir);
  const state = Array.from({ length: processes }, () => ({ committed: 0, cpuSeconds: 0 }));
  const started = performance.now();
  const workers: ChildProcess[] = state.map((s) => {
    const w = fork(
      join(import.meta.dirname, 'scale-worker.ts'),
      [KIND, busUrl, clickhouseUrl, 'bench_scale', db.url],
      { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    w.on('message', (m: { committed: number; cpuSeconds: number }) => Object.assign(s, m));
    return w;
  });
  while (state.reduce((n, s) => n + s.committed, 0) < COUNT) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - started) / 1000;
  const engineCpu = total(cpuSince(engineBefore, await processCpu(chdbDir)));
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          w.once('exit', () => resolve());
          w.send('stop');
        }),
    ),
  );
  process.stdout.write(`${seconds.toFixed(1)} s (${state.map((s) => s.committed).join(' + ')})\n`);
  return { processes, seconds, ingestCpu: state.reduce((n, s) => n + s.cpuSeconds, 0), engineCpu };
};

const runs: Run[] = [];
try {
  runs.push(await drain(1));
  runs.push(await drain(2));
} finally {
  await bus.close();
  await store.close();
  await nats?.stop();
  await db.drop();
  server.kill('SIGTERM');
  await rm(chdbDir, { recursive: true, force: true });
  if (natsDir) await rm(natsDir, { recursive: true, force: true });
}
const rows: BenchRow[] = runs.flatMap((r) => [
  {
    metric: `${r.processes} ingest process(es): seconds to drain, requests/s`,
    measured: `${r.seconds.toFixed(1)} s, ${Math.round(COUNT / r.seconds).toLocaleString('en-US')}/s`,
    ...(r.processes === 2
      ? { target: '~2x one process', met: COUNT / r.seconds >= (1.8 * COUNT) / runs[0]!.seconds }
      : {}),
  },
  {
    metric: `${r.processes} ingest process(es): their CPU / the engine's, per request`,
    measured: `${Math.round((r.ingestCpu * 1e6) / COUNT)} µs / ${Math.round((r.engineCpu * 1e6) / COUNT)} µs`,
  },
]);
printTable(
  `Ingest scale-out on ${KIND === 'nats' ? 'JetStream' : 'the Postgres-table bus'}, HTTP adapter to the chdb-backed test server: ` +
    `${COUNT.toLocaleString('en-US')} requests, bodies of ${BODY} bytes (${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end)`,
  rows,
);
