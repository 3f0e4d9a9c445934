/**
 * bench:audit (SPEC 1.8, 4.8, 6): the audit service's throughput and proof latency. The issue's
 * target: 20,000 events/s sealed and an inclusion proof in under 5 ms, at 1M events per tenant.
 *
 * 1. End to end over the bus: audit events published onto `svc.audit.events.<tenant>` (the
 *    Postgres-table bus, and JetStream with `--bus postgres,nats`), stored by AuditConsumer and
 *    sealed by AuditSealer; checked stored exactly once and sealed, from the tables and the evidence.
 * 2. One tenant at scale: appendAuditEvents in chunks, sealNextBatch until all is sealed, then
 *    inclusion and consistency proofs through AuditReads, every one verified against a tree the
 *    bench computes itself.
 * 3. Offline verification: verifyEvidence over that tenant's archives and manifests.
 *
 * CPU per event from /proc: this process (all threads) and the PostgreSQL backends of the bench's
 * database, apart. Everything runs in a throwaway database and object directory, removed at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { SealThread } from '../../src/projections/audit/seal-thread.js';
import { prng } from '../../test/helpers/fuzz.js';
import { benchDatabase } from '../lib/database.js';
import { printTable } from '../lib/report.js';
import { type BulkResult, runBulk, runVerify, type VerifyResult } from './bulk.js';
import { type BusKind, type BusPhaseResult, runBusPhase } from './e2e.js';
import { auditEventFactory } from './events.js';
import { cpuMeter, natsNeedleOf } from './meter.js';
import { bulkRows, busRows, verifyRows } from './report.js';

const HELP = `bench:audit: audit events stored and sealed per second, proof latency, offline verification

  npm run bench:audit -- [options]

  --events <n>            events over the bus, phase 1 (default 100000; 0 skips it)
  --tenants <n>           tenants they are spread over (default 4)
  --bus <list>            postgres, nats or postgres,nats (default postgres)
  --live                  publish while the consumer runs (default: publish first, then drain)
  --tenant-events <n>     events of the one tenant of phases 2 and 3 (default 1000000; 0 skips them)
  --chunk <n>             events per appendAuditEvents call in phase 2 (default 5000)
  --event-bytes <n>       canonical JSON bytes of each event (default 300)
  --max-events <n>        seal policy: events per batch (default 4096)
  --max-age-ms <n>        seal policy, phase 1: seal a tenant's events once the oldest waited this long (default 250)
  --seal-interval-ms <n>  phase 1: the sealer looks for due tenants this often (default 50)
  --proofs <n>            inclusion proofs timed at each tree size (default 1000)
  --consistency-proofs <n> consistency proofs timed (default 100)
  --warmup <n>            untimed proofs of each kind first (default 20)
  --cold-proofs <n>       inclusion proofs timed before the bench runs ANALYZE on the audit tables (default 50)
  --seed <n>              which events the proofs ask for (default 1)
  --drain-timeout <s>     phase 1: longest wait for every event to be sealed (default 600)
  --cpu-prof <dir>        a V8 CPU profile of phase 2's sealing into <dir>
  --json                  the figures as JSON on stdout (progress stays on stderr)
  --help                  this text

Run one benchmark at a time on a shared machine: flock /tmp/bench.lock npm run bench:audit`;

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    tenants: { type: 'string', default: '4' },
    bus: { type: 'string', default: 'postgres' },
    live: { type: 'boolean', default: false },
    'tenant-events': { type: 'string', default: '1000000' },
    chunk: { type: 'string', default: '5000' },
    'event-bytes': { type: 'string', default: '300' },
    'max-events': { type: 'string', default: '4096' },
    'max-age-ms': { type: 'string', default: '250' },
    'seal-interval-ms': { type: 'string', default: '50' },
    proofs: { type: 'string', default: '1000' },
    'consistency-proofs': { type: 'string', default: '100' },
    warmup: { type: 'string', default: '20' },
    'cold-proofs': { type: 'string', default: '50' },
    seed: { type: 'string', default: '1' },
    'drain-timeout': { type: 'string', default: '600' },
    'cpu-prof': { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  console.log(HELP);
  process.exit(0);
}
const integer = (name: keyof typeof args, min: number): number => {
  const n = Number(args[name]);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
const EVENTS = integer('events', 0);
const TENANTS = integer('tenants', 1);
const TENANT_EVENTS = integer('tenant-events', 0);
const CHUNK = integer('chunk', 1);
const EVENT_BYTES = integer('event-bytes', 0);
const MAX_EVENTS = integer('max-events', 1);
const MAX_AGE_MS = integer('max-age-ms', 0);
const SEAL_INTERVAL_MS = integer('seal-interval-ms', 1);
const PROOFS = integer('proofs', 1);
const CONSISTENCY_PROOFS = integer('consistency-proofs', 1);
const WARMUP = integer('warmup', 0);
const COLD_PROOFS = integer('cold-proofs', 1);
const SEED = integer('seed', 0);
const DRAIN_MS = integer('drain-timeout', 1) * 1000;
const BUSES = args.bus.split(',').map((b) => b.trim()) as BusKind[];
if (BUSES.some((b) => b !== 'postgres' && b !== 'nats')) throw new Error('--bus is postgres, nats or both');
const NATS_URL = process.env.SVC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PUBLISHER_APP = 'svc-bench-publisher';
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const flags = process.argv.slice(2).join(' ') || '(none: the defaults)';

const say = (text: string) => process.stderr.write(text);

/** mulberry32 (test/helpers/fuzz.ts): the same events asked for on every run with the same seed. */
const seeded = prng;

/** A CPU profile of this thread between the call and the stop, when --cpu-prof is given. */
const profile = (label: string) => {
  const dir = args['cpu-prof'];
  if (!dir) return async () => null;
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  return async () => {
    const taken = await new Promise<unknown>((done, fail) =>
      session.post('Profiler.stop', (err, result) => (err ? fail(err) : done(result.profile))),
    );
    session.disconnect();
    await mkdir(dir, { recursive: true });
    const file = resolve(dir, `audit-${label}-${Date.now()}.cpuprofile`);
    await writeFile(file, JSON.stringify(taken));
    return file;
  };
};

/** Clean-up that runs on success, failure and Ctrl-C alike, last registered first. */
const cleanups: (() => Promise<unknown>)[] = [];
const runCleanups = async (list: (() => Promise<unknown>)[]) => {
  while (list.length > 0)
    await list.pop()!().catch((err: unknown) => say(`clean-up: ${(err as Error).message}\n`));
};
let stopping = false;
const interrupted = (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  say(`\n${signal}: cleaning up\n`);
  process.on('unhandledRejection', () => {});
  void runCleanups(cleanups).finally(() => process.exit(130));
};
process.once('SIGINT', interrupted);
process.once('SIGTERM', interrupted);

const loads: number[] = [];
const loadSampler = setInterval(() => loads.push(loadavg()[0]!), 5_000);
loadSampler.unref();

say(`bench:audit, flags: ${flags}\n`);
const db = await benchDatabase('audit');
cleanups.push(() => db.drop());
const objectsDir = await mkdtemp(join(tmpdir(), 'svc-bench-audit-objects-'));
cleanups.push(() => rm(objectsDir, { recursive: true, force: true }));
const objects = new FsObjectStore(objectsDir);
const masterKey = randomBytes(32);
// Batches are built on a worker thread, as the audit role builds them.
const sealThread = new SealThread();
cleanups.push(() => sealThread.close());
const database = new URL(db.url).pathname.slice(1);
const makeEvent = auditEventFactory(EVENT_BYTES);

const busResults: BusPhaseResult[] = [];
let bulk: BulkResult | null = null;
let verified: VerifyResult | null = null;
let failed = false;
try {
  for (const kind of BUSES) {
    if (EVENTS === 0) break;
    const phase: (() => Promise<unknown>)[] = [];
    cleanups.push(() => runCleanups(phase));
    try {
      busResults.push(
        await runBusPhase({
          kind,
          db,
          natsUrl: NATS_URL,
          run,
          events: EVENTS,
          tenants: TENANTS,
          live: args.live,
          policy: { maxEvents: MAX_EVENTS, maxAgeMs: MAX_AGE_MS },
          sealIntervalMs: SEAL_INTERVAL_MS,
          drainTimeoutMs: DRAIN_MS,
          objects,
          masterKey,
          builder: sealThread.build,
          makeEvent,
          meter: cpuMeter({
            pool: db.pool,
            database,
            leaveOut: PUBLISHER_APP,
            natsNeedle: kind === 'nats' ? natsNeedleOf(NATS_URL) : null,
          }),
          publisherApp: PUBLISHER_APP,
          say,
          defer: (fn) => phase.push(fn),
        }),
      );
    } finally {
      await runCleanups(phase);
    }
  }
  if (TENANT_EVENTS > 0) {
    const options = {
      pool: db.pool,
      objects,
      masterKey,
      builder: sealThread.build,
      tenant: 'bulk',
      events: TENANT_EVENTS,
      chunk: CHUNK,
      maxEvents: MAX_EVENTS,
      proofs: PROOFS,
      consistencyProofs: CONSISTENCY_PROOFS,
      warmup: WARMUP,
      coldProofs: COLD_PROOFS,
      random: seeded(SEED),
      makeEvent,
      meter: cpuMeter({ pool: db.pool, database, leaveOut: PUBLISHER_APP, natsNeedle: null }),
      say,
      profile,
    };
    bulk = await runBulk(options);
    verified = await runVerify(options, bulk);
  }
} catch (err) {
  failed = true;
  say(`\nFAILED: ${(err as Error).stack ?? String(err)}\n`);
} finally {
  if (!stopping) {
    say('dropping the bench database and the object directory\n');
    await runCleanups(cleanups);
  }
}
clearInterval(loadSampler);

const problems = [
  ...busResults.flatMap((r) =>
    r.check.lost + r.check.duplicated + r.check.unsealed + r.check.breaks > 0 ||
    r.sealedSeconds === null ||
    !r.check.evidence.startsWith('ok')
      ? [`${r.label}: events lost, duplicated, unsealed or not verifiable (see the table)`]
      : [],
  ),
  ...(bulk?.wrong ?? []),
  ...(verified && !verified.ok ? [`offline verification: ${verified.outcome}`] : []),
];
const load = loadavg().map((l) => l.toFixed(2));
const loadDuring =
  loads.length === 0
    ? 'not sampled (run under 5 s)'
    : `1-min load ${Math.min(...loads).toFixed(2)} to ${Math.max(...loads).toFixed(2)} (sampled every 5 s)`;
const machine = `${cpus().length} CPUs; ${loadDuring}; load average ${load.join(' ')} at the end`;

if (args.json) {
  const { tree: _tree, ...bulkFigures } = bulk ?? { tree: null };
  console.log(
    JSON.stringify(
      { flags, machine, bus: busResults, bulk: bulk ? bulkFigures : null, verify: verified, problems },
      null,
      2,
    ),
  );
} else {
  console.log(`\nbench:audit, flags: ${flags}\n${machine}`);
  if (busResults.length > 0)
    printTable(
      `1. End to end over the bus: ${EVENTS.toLocaleString('en-US')} events, ${TENANTS} tenants, ` +
        `${args.live ? 'published live beside the consumer' : 'published first, then drained'}; seal policy ` +
        `${MAX_EVENTS} events or ${MAX_AGE_MS} ms, sealer every ${SEAL_INTERVAL_MS} ms`,
      busResults.flatMap((r) => busRows(r, args.live)),
    );
  if (bulk)
    printTable(
      `2. One tenant at scale: ${TENANT_EVENTS.toLocaleString('en-US')} events appended in chunks of ${CHUNK}, ` +
        `sealed in batches of ${MAX_EVENTS}; proofs one at a time`,
      bulkRows(bulk, verified),
    );
  if (verified)
    printTable(
      '3. Offline verification (verifyEvidence, as `svc audit verify`)',
      verifyRows(verified, bulk!),
    );
  for (const p of problems) console.log(`FAIL ${p}`);
}
process.exit(failed || problems.length > 0 ? 1 : 0);
