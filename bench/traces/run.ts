import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Cleanup, cleanupStack } from '../gateway/processes.js';
import { cpuSince, processCpu, threadCpu } from '../ingest/cpu.js';
import { meterTree } from '../lib/proc.js';
import { exportFactory, sessionIdOf } from './exports.js';
import { runLoad } from './load.js';
import { type QueryApi, requestCount, sessionSpanCount, sessionWatcher } from './queryable.js';
import { printReport, problemsIn, type RequestPhase, type Row } from './report.js';
import { requestPublisher } from './requests.js';
import { type BenchService, natsStats, startService, svcEntry } from './service.js';
import { dataProcessOf, readSplit, threadsSince } from './split.js';

const HELP = `bench:traces: OTLP trace ingest end to end through svc serve (SPEC 4.3)

  npm run bench:traces -- [options]

  --seconds <n>        seconds of load per row (default 30)
  --concurrency <n>    exports in flight at once (default 4)
  --only <row>         embedded or jetstream (default both)
  --warmup <n>         seconds of load before each measured run, not counted (default 3)
  --drain-timeout <n>  seconds after the load to wait for every span to be queryable (default 180)
  --payload <bytes>    size of each span's input.value (output.value is 3/4 of it; default 400)
  --templates <n>      distinct encoded exports the load is patched from (default 4)
  --gzip               send Content-Encoding: gzip (compressed at send time, level 1)
  --requests <n>       request.completed envelopes for the request-ingest comparison (default 10000; 0 skips)
  --request-body <n>   inline request and response body bytes of each (default 2048)
  --cpu-prof <dir>     --cpu-prof for svc serve and its data process; profiles land in <dir>
  --svc-bin <path>     another checkout's bin/svc.js (default this one's; e.g. a compiled copy to profile)
  --nats-max-pending <MB>
                       the JetStream row's nats-server max_pending (default its own, 64 MB)
  --keep-logs          keep svc serve's log (its path is printed; kept anyway when something failed)
  --json               print the results as JSON instead of the table
  --help               this text

Run one benchmark at a time on a shared machine: flock /tmp/bench.lock npm run bench:traces`;

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '4' },
    only: { type: 'string' },
    warmup: { type: 'string', default: '3' },
    'drain-timeout': { type: 'string', default: '180' },
    payload: { type: 'string', default: '400' },
    templates: { type: 'string', default: '4' },
    gzip: { type: 'boolean', default: false },
    requests: { type: 'string', default: '10000' },
    'request-body': { type: 'string', default: '2048' },
    'cpu-prof': { type: 'string' },
    'svc-bin': { type: 'string' },
    'keep-logs': { type: 'boolean', default: false },
    'nats-max-pending': { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  console.log(HELP);
  process.exit(0);
}
const positive = (name: string, text: string | undefined, min = 1): number => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
const SECONDS = positive('seconds', args.seconds);
const CONCURRENCY = positive('concurrency', args.concurrency);
const WARMUP = positive('warmup', args.warmup, 0);
const DRAIN_MS = positive('drain-timeout', args['drain-timeout']) * 1_000;
const PAYLOAD = positive('payload', args.payload, 16);
const TEMPLATES = positive('templates', args.templates);
const REQUESTS = positive('requests', args.requests, 0);
const REQUEST_BODY = positive('request-body', args['request-body'], 0);
const ROWS = (args.only ? [args.only] : ['embedded', 'jetstream']) as ('embedded' | 'jetstream')[];
if (ROWS.some((r) => r !== 'embedded' && r !== 'jetstream'))
  throw new Error('--only is embedded or jetstream');
/** Exports per session id: the unit the query API counts by (queryable.ts). */
const EXPORTS_PER_SESSION = 8;
const NATS_MAX_PENDING_MB = args['nats-max-pending']
  ? positive('nats-max-pending', args['nats-max-pending'])
  : undefined;
const SVC_BIN_PATH = args['svc-bin'] ? resolve(args['svc-bin']) : undefined;
const ENTRY =
  svcEntry(SVC_BIN_PATH) === 'dist' ? `${SVC_BIN_PATH ? `${SVC_BIN_PATH}'s ` : ''}dist/` : 'src/ through tsx';
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/** Progress goes to stderr, so --json leaves stdout to the figures. */
const say = (text: string) => process.stderr.write(text);

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const warmUp = async (svc: BenchService, api: QueryApi, factory: ReturnType<typeof exportFactory>) => {
  if (WARMUP === 0) return 0;
  say(`${svc.label}: warming up for ${WARMUP} s... `);
  const watcher = sessionWatcher(api, { everyMs: 250, lateMs: 100 });
  const warm = await runLoad({
    url: svc.httpUrl,
    traceKey: svc.traceKey,
    factory,
    concurrency: CONCURRENCY,
    seconds: WARMUP,
    firstIndex: 0,
    exportsPerSession: 'warmup',
    sessionIdOf: (s) => sessionIdOf(run, s),
    gzip: args.gzip,
    onSessionClosed: watcher.add,
  });
  const done = await watcher.finish(performance.now() + DRAIN_MS);
  if (done.completeAt === null) throw new Error(`${svc.label}: the warm-up's spans never became queryable`);
  say(
    `${warm.acceptedSpans.toLocaleString('en-US')} spans queryable after ${((done.completeAt - warm.startedAt) / 1000).toFixed(1)} s\n`,
  );
  return warm.exports;
};

const requestPhase = async (
  svc: BenchService,
  api: QueryApi,
  meter: ReturnType<typeof meterTree>,
): Promise<RequestPhase | null> => {
  if (REQUESTS === 0) return null;
  say(
    `${svc.label}: request ingest, ${REQUESTS.toLocaleString('en-US')} envelopes (bodies ${REQUEST_BODY} B)... `,
  );
  const publisher = requestPublisher(svc);
  const from = new Date(Date.now() - 60_000);
  const before = await requestCount(api, from);
  const cpuBefore = await meter.read();
  const natsBefore = svc.bus.kind === 'nats' ? await processCpu(svc.bus.storeDir) : null;
  const started = performance.now();
  try {
    await publisher.publish(REQUESTS, REQUEST_BODY, run);
    const deadline = performance.now() + DRAIN_MS;
    while ((await requestCount(api, from)) < before + REQUESTS) {
      if (performance.now() > deadline)
        throw new Error(`${svc.label}: the requests never all became queryable`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await publisher.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await meter.read();
  const natsAfter = svc.bus.kind === 'nats' ? await processCpu(svc.bus.storeDir) : null;
  say(`${seconds.toFixed(1)} s\n`);
  return {
    requests: REQUESTS,
    seconds,
    cpuSeconds: cpuAfter.appCpu - cpuBefore.appCpu,
    postgresSeconds: cpuAfter.postgresCpu - cpuBefore.postgresCpu,
    natsSeconds: natsBefore && natsAfter ? cpuOf(natsAfter) - cpuOf(natsBefore) : null,
  };
};

const cpuOf = (reading: Map<string, number>) => [...reading.values()].reduce((a, b) => a + b, 0);

const measure = async (cleanup: Cleanup, which: 'embedded' | 'jetstream'): Promise<Row> => {
  const nodeArgs = args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${args['cpu-prof']}`] : [];
  say(`${which}: starting svc serve (${ENTRY})... `);
  const svc = await startService(cleanup, {
    bus: which === 'jetstream' ? 'nats' : 'postgres',
    nodeArgs,
    ...(SVC_BIN_PATH ? { bin: SVC_BIN_PATH } : {}),
    ...(NATS_MAX_PENDING_MB ? { natsMaxPendingMb: NATS_MAX_PENDING_MB } : {}),
  });
  say(`${svc.httpUrl}\n`);
  const api: QueryApi = { httpUrl: svc.httpUrl, orgId: svc.orgId, admin: svc.admin };
  const factory = exportFactory({ run, templates: TEMPLATES, payloadBytes: PAYLOAD });
  const firstIndex = await warmUp(svc, api, factory);

  say(
    `${svc.label}: ${SECONDS} s of load, ${CONCURRENCY} exports in flight (${Math.round(factory.averageBytes / 1024)} KiB each)`,
  );
  const meter = meterTree(svc.pid);
  await meter.start();
  const dataPid = await dataProcessOf(svc.pid);
  const splitBefore = await readSplit(svc.pid, dataPid);
  const natsBefore = svc.bus.kind === 'nats' ? await processCpu(svc.bus.storeDir) : null;
  const benchBefore = process.cpuUsage();
  const benchThreadsBefore = await threadCpu();
  const watcher = sessionWatcher(api, { everyMs: 500, lateMs: 100 });
  const load = await runLoad({
    url: svc.httpUrl,
    traceKey: svc.traceKey,
    factory,
    concurrency: CONCURRENCY,
    seconds: SECONDS,
    firstIndex,
    exportsPerSession: EXPORTS_PER_SESSION,
    sessionIdOf: (s) => sessionIdOf(run, s),
    gzip: args.gzip,
    onProgress: () => say('.'),
    onSessionClosed: watcher.add,
  });
  say(` ${load.acceptedSpans.toLocaleString('en-US')} spans accepted; until queryable... `);
  const done = await watcher.finish(load.endedAt + DRAIN_MS);
  const usage = await meter.read();
  const splitAfter = await readSplit(svc.pid, dataPid);
  if (dataPid === null || (await dataProcessOf(svc.pid)) !== dataPid)
    say(`${svc.label}: the data process was not found or was restarted; the split by process is not exact\n`);
  const bench = process.cpuUsage(benchBefore);
  const benchThreads = cpuSince(benchThreadsBefore, await threadCpu());
  const natsAfter = svc.bus.kind === 'nats' ? await processCpu(svc.bus.storeDir) : null;
  say(
    done.completeAt === null
      ? 'not within the drain timeout\n'
      : `${((done.completeAt - load.endedAt) / 1000).toFixed(1)} s after the load\n`,
  );

  // Nothing lost: the distinct spans the query API shows, session by session, against those accepted.
  let queryableSpans = 0;
  for (const session of load.tracesBySession.keys()) queryableSpans += await sessionSpanCount(api, session);
  const nats = svc.bus.kind === 'nats' ? await natsStats(svc.bus.monitorUrl) : null;
  const letters = (await svc.svc(['dlq', 'list'])) as { consumer: string; reason: string }[];
  const deadLetters: Record<string, number> = {};
  for (const l of letters)
    deadLetters[`${l.consumer}/${l.reason}`] = (deadLetters[`${l.consumer}/${l.reason}`] ?? 0) + 1;
  const requests = await requestPhase(svc, api, meter);
  const failed = load.acceptedSpans !== queryableSpans || done.completeAt === null || letters.length > 0;
  const keep = failed || args['keep-logs'] || (nats?.slowConsumers ?? 0) > 0;
  if (keep) svc.keepLog();
  const final = await meter.read();
  await meter.stop();
  const { tracesBySession: _t, latencies, refused, ...counts } = load;
  return {
    label: svc.label,
    load: {
      ...counts,
      refused: Object.fromEntries(refused),
      latencyMs: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? 0,
      },
    },
    acceptedSeconds: (load.endedAt - load.startedAt) / 1000,
    endToEndSeconds: done.completeAt === null ? null : (done.completeAt - load.startedAt) / 1000,
    lagAtEndSeconds: done.completeAt === null ? null : (done.completeAt - load.endedAt) / 1000,
    queryableSpans,
    lost: load.acceptedSpans - queryableSpans,
    missingTraces: [...done.short.values()].reduce((a, b) => a + b, 0),
    polls: done.polls,
    appCpuSeconds: usage.appCpu,
    postgresCpuSeconds: usage.postgresCpu,
    natsCpuSeconds: natsBefore && natsAfter ? cpuOf(natsAfter) - cpuOf(natsBefore) : null,
    benchCpuSeconds: (bench.user + bench.system) / 1e6,
    benchThreads,
    rssPeakMb: final.appRssPeak,
    serveCpuSeconds: splitAfter.serve - splitBefore.serve,
    dataCpuSeconds: splitAfter.data - splitBefore.data,
    serveHwmMb: splitAfter.serveHwmMb,
    serveThreads: threadsSince(splitBefore.serveThreads, splitAfter.serveThreads),
    dataThreads: threadsSince(splitBefore.dataThreads, splitAfter.dataThreads),
    dataHwmMb: splitAfter.dataHwmMb,
    processes: final.processes,
    requests,
    nats,
    deadLetters,
    problems: keep ? await problemsIn(svc.logFile) : [],
    logFile: keep
      ? `${svc.logFile}${svc.bus.kind === 'nats' ? ` (nats-server's: ${svc.bus.logFile})` : ''}`
      : null,
  };
};

let current: Cleanup | null = null;
/** Set on Ctrl-C: the clean-up under way, after which the process exits. */
let stopping: Promise<never> | null = null;
const interrupted = (signal: NodeJS.Signals) => {
  say(`\n${signal}: cleaning up\n`);
  // What was in flight fails as the service goes; only the clean-up matters now.
  process.on('unhandledRejection', () => {});
  stopping = (current?.run() ?? Promise.resolve()).finally(() => process.exit(130)) as Promise<never>;
};
process.once('SIGINT', interrupted);
process.once('SIGTERM', interrupted);

const rows: Row[] = [];
for (const which of ROWS) {
  const cleanup = cleanupStack();
  current = cleanup;
  try {
    rows.push(await measure(cleanup, which));
  } catch (err) {
    // Interrupted: the row failed because its service went away; wait for the clean-up to finish.
    if (stopping) await stopping;
    throw err;
  } finally {
    if (!stopping) {
      say(`${which}: stopping\n`);
      await cleanup.run();
    }
    current = null;
  }
  if (stopping) await stopping;
}

printReport(rows, {
  run,
  seconds: SECONDS,
  concurrency: CONCURRENCY,
  payloadBytes: PAYLOAD,
  gzip: args.gzip,
  entry: ENTRY,
  drainMs: DRAIN_MS,
  requests: REQUESTS,
  json: args.json,
});
