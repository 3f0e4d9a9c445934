/**
 * Gateway overhead, side by side in one run: the same autocannon load at 1 and 32 connections
 * (128 with BENCH_GATEWAY_CONNECTIONS), buffered and streamed, sent
 *   - direct to a mock OpenAI upstream,
 *   - through a bare fastify + undici proxy (the ceiling: Node's own HTTP plumbing here),
 *   - through `svc serve --roles gateway` alone (server PostgreSQL; request records to NATS
 *     JetStream as a scale-out deployment sends them, or with BENCH_GATEWAY_BUS=postgres to the
 *     Postgres-table bus of that database),
 *   - through `npm start` as shipped (`svc serve`, every role, the embedded default: embedded
 *     PostgreSQL, chdb, the Postgres-table bus, ingest as records come), with its ingest lag,
 *   - through Portkey's gateway when PORTKEY_DIR points at an install of `@portkey-ai/gateway`,
 * then the targets as a check list computed from the same run, and a check that a slow stream is
 * relayed chunk by chunk. Everything started here is removed at the end, on failure and Ctrl-C too.
 * bench/README.md says how to install Portkey and what every variable does.
 *
 * CPU is read from /proc (user + system of each process tree over the run) rather than from wall
 * time: load generator, mock and targets share this machine's cores with other work, which moves
 * latency and throughput but not the CPU a request costs.
 */
import { mkdir } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { meterTree, type TreeUsage } from '../lib/proc.js';
import { printTable } from '../lib/report.js';
import { type LagResult, quantile, startLagProbe, untilQueryable } from './ingest-lag.js';
import { type LoadResult, type LoadTarget, runLoad } from './load.js';
import { SLOW_MODEL } from './mock-upstream.js';
import {
  type BenchGateway,
  cleanupStack,
  type DefaultService,
  gatewayAloneBus,
  gatewayMetrics,
  onInterrupt,
  type Portkey,
  prepareBuild,
  startBareProxy,
  startDefault,
  startGateway,
  startMock,
  startPortkey,
} from './processes.js';
import { type Arrival, frameArrivals, relayVerdict } from './relay.js';

const DURATION = Number(process.env.BENCH_GATEWAY_DURATION ?? 6);
const WARMUP = 1.5;
/**
 * Seconds of 32-connection load on each target and mode before any run is measured. V8 optimizes
 * a function after enough calls; the gateway's request path spans far more code than the mock's,
 * and the first run (1 connection, a few hundred requests a second) used to measure it still
 * interpreted: 2 ms of CPU a request instead of 0.5.
 */
const JIT_WARMUP = Number(process.env.BENCH_GATEWAY_JIT_WARMUP ?? 5);
/** How long `npm start` may take after a run to make that run's requests queryable. */
const CATCH_UP_TIMEOUT_MS = 120_000;
const ALL_MODES = ['buffered', 'streamed'] as const;
type Mode = (typeof ALL_MODES)[number];
const CONNECTIONS = (process.env.BENCH_GATEWAY_CONNECTIONS ?? '1,32').split(',').map(Number);
const MODES = ALL_MODES.filter(
  (m) => !process.env.BENCH_GATEWAY_ONLY || m === process.env.BENCH_GATEWAY_ONLY,
);
const PROFILE_DIR = process.env.BENCH_GATEWAY_CPU_PROF;
const PORTKEY_DIR = process.env.PORTKEY_DIR;

const TARGETS = ['direct', 'proxy', 'gateway', 'default', 'portkey'] as const;
type TargetName = (typeof TARGETS)[number];
const LABEL: Record<TargetName, string> = {
  direct: 'direct',
  proxy: 'bare proxy',
  gateway: 'gateway alone',
  default: 'npm start',
  portkey: 'Portkey',
};

const chatBody = (model: string, mode: Mode): string =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    // Asked for on both paths: the gateway always asks upstream for usage, so the direct run
    // must too or it would move fewer bytes than the gateway's upstream leg.
    ...(mode === 'streamed' ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

interface Measured extends LoadResult {
  /** The target's process tree over the load (null for direct runs: the mock is not the subject). */
  usage: TreeUsage | null;
  /** npm start only: over the load and until its requests were queryable, ingest included. */
  throughCatchUp: TreeUsage | null;
  /** npm start only: seconds after the load until every request it served was queryable. */
  caughtUpSeconds: number | null;
  lag: LagResult | null;
  /** Requests the target served in the measured run, probes included. */
  served: number;
}

interface Run {
  mode: Mode;
  connections: number;
  results: Partial<Record<TargetName, Measured>>;
}

const ms = (v: number, digits = 3) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const rate = (v: number) => Math.round(v).toLocaleString('en-US');
const perRequestMs = (cpuSeconds: number, requests: number) => (1e3 * cpuSeconds) / requests;

const printGrid = (title: string, header: string[], rows: string[][]): void => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padStart(widths[i]!)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log('');
};

const printArrivals = (direct: Arrival[], through: { label: string; arrivals: Arrival[] }[]): void => {
  const lag = (a: Arrival | undefined) => (a?.lagMs == null ? '' : ms(a.lagMs, 1));
  const all = [direct, ...through.map((t) => t.arrivals)];
  const rows = Array.from({ length: Math.max(...all.map((a) => a.length)) }, (_, i) => [
    String(i + 1),
    all.map((a) => a[i]?.kind).find(Boolean) ?? '',
    ...all.flatMap((a) => [a[i] ? ms(a[i].atMs, 1) : '-', lag(a[i])]),
  ]);
  printGrid(
    'Relay check: each SSE frame of a slow stream (a content chunk every 100 ms); at = ms after the request, lag = ms after the mock wrote it',
    ['#', 'frame', 'direct at', 'direct lag', ...through.flatMap((t) => [`${t.label} at`, `${t.label} lag`])],
    rows,
  );
};

const USAGE = `bench:gateway: the request path side by side in one run (direct, bare proxy, gateway alone,
npm start, and Portkey when PORTKEY_DIR is set); req/s, p50/p99 overhead, CPU a request, RSS,
npm start's ingest lag, then the targets as a check list.

  npm run bench:gateway [-- --workers N | --help]

  --workers <n>   1 and n (2 or more) gateway workers side by side (svc serve --workers), instead of
                  the targets
  --help          this text

Set through the environment (bench/README.md says more):
  BENCH_GATEWAY_DURATION=6         seconds a measured run (60 for the issue's figures)
  BENCH_GATEWAY_CONNECTIONS=1,32   connection counts
  BENCH_GATEWAY_ONLY               buffered or streamed (default both)
  BENCH_GATEWAY_JIT_WARMUP=5       seconds of 32-connection load on every target and mode first
  BENCH_GATEWAY_BUS=nats           the gateway-alone row's bus: nats or postgres
  BENCH_GATEWAY_FROM=dist          src runs svc through tsx
  BENCH_GATEWAY_SKIP_BUILD=1       use dist/ as it is
  BENCH_GATEWAY_MOCK=inline        the mock upstream in this process instead of a child
  BENCH_GATEWAY_CPU_PROF=<dir>     a CPU profile of the gateway-alone process
  BENCH_GATEWAY_WORKERS_CONNECTIONS=32,64   connection counts of --workers
  PORTKEY_DIR=<dir>                an install of @portkey-ai/gateway: adds the Portkey row

Everything it starts (children, databases, data dirs) is removed at the end, also on Ctrl-C,
SIGTERM, SIGHUP or a closed output (| head).
`;

const usageError = (why: string): never => {
  process.stderr.write(`bench:gateway: ${why}\n\n${USAGE}`);
  process.exit(2);
};
let flags: { help?: boolean; workers?: string };
try {
  flags = parseArgs({
    options: { help: { type: 'boolean', short: 'h' }, workers: { type: 'string' } },
    strict: true,
  }).values;
} catch (err) {
  flags = usageError((err as Error).message);
}
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
// `-- --workers N`: 1 and N gateway workers side by side, instead of the targets below.
const workers = flags.workers === undefined ? null : Number(flags.workers);
if (workers !== null && !(Number.isInteger(workers) && workers >= 2))
  usageError('--workers takes a whole number of 2 or more');
if (workers !== null) {
  const { runWorkersBench } = await import('./workers.js');
  await runWorkersBench(workers);
  process.exit(0);
}

const cleanup = cleanupStack();
const interrupt = onInterrupt(cleanup);

/** One streamed and one buffered request through Portkey: it must answer 200 with the mock's reply. */
const portkeyServes = async (pk: Portkey, mode: Mode): Promise<string | null> => {
  const res = await fetch(`${pk.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: pk.headers,
    body: chatBody('bench-upstream', mode),
  });
  const text = await res.text();
  if (res.status !== 200) return `answers ${res.status} (${text.slice(0, 120)})`;
  // The mock's completion id proves the request went through to it, not to any real provider.
  if (!text.includes('chatcmpl-bench')) return `answers 200 without the mock's reply: ${text.slice(0, 120)}`;
  return null;
};

const started = performance.now();
// The 2 cores are shared with anything else running: a busy machine shows up here, not as an error.
const loadBefore = loadavg()[0]!;
console.log(
  `load average (1 min) before the run: ${loadBefore.toFixed(2)}${loadBefore > 0.5 ? ' - other work is running on this machine; the numbers below include it' : ''}`,
);
try {
  const mock = await startMock(cleanup, process.env.BENCH_GATEWAY_MOCK === 'inline');
  console.log(`mock upstream on ${mock.origin} (${mock.where})`);
  const { origin: proxyOrigin, pid: proxyPid } = await startBareProxy(cleanup, mock.origin);
  console.log(`bare fastify + undici proxy on ${proxyOrigin} (pid ${proxyPid}, through tsx)`);
  if (PROFILE_DIR) await mkdir(resolve(PROFILE_DIR), { recursive: true });
  interrupt.check();
  const from = await prepareBuild();
  const gw = await startGateway(cleanup, mock.origin, from, {
    nodeArgs: PROFILE_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROFILE_DIR)}`, '--cpu-prof-interval=200']
      : [],
    env: {},
  });
  console.log(
    `gateway alone: svc serve --roles gateway from ${gw.from} on ${gw.httpUrl} (pid ${gw.pid}; server PostgreSQL; bus ${gatewayAloneBus() === 'nats' ? 'NATS JetStream' : 'Postgres table'})`,
  );
  interrupt.check();
  const def: DefaultService = await startDefault(cleanup, mock.origin, from);
  console.log(
    `npm start: svc serve (every role, embedded default) from ${def.from} on ${def.httpUrl} (pid ${def.pid}; data dir ${def.dataDir})`,
  );
  interrupt.check();
  let portkey: Portkey | null = null;
  const portkeySkipped: Partial<Record<Mode, string>> = {};
  if (!PORTKEY_DIR) {
    console.log('Portkey: skipped, PORTKEY_DIR is not set (bench/README.md says how to install it)');
  } else {
    portkey = await startPortkey(cleanup, resolve(PORTKEY_DIR), mock.origin);
    for (const mode of MODES) {
      const why = await portkeyServes(portkey, mode);
      if (why) portkeySkipped[mode] = why;
    }
    console.log(
      `Portkey ${portkey.version} on ${portkey.origin} (pid ${portkey.pid}, node build/start-server.js --headless; x-portkey-provider openai, custom host the mock)` +
        MODES.filter((m) => portkeySkipped[m])
          .map((m) => `\n  Portkey ${m}: not measured, a ${m} chat ${portkeySkipped[m]}`)
          .join(''),
    );
  }

  const directHeaders = { authorization: 'Bearer sk-bench-byok', 'content-type': 'application/json' };
  const svcHeaders = (s: BenchGateway) => ({
    authorization: `Bearer ${s.apiKey}`,
    'content-type': 'application/json',
  });
  const target = (name: TargetName, mode: Mode): LoadTarget | null => {
    switch (name) {
      case 'direct':
        return {
          url: `${mock.origin}/v1/chat/completions`,
          headers: directHeaders,
          body: chatBody('bench-upstream', mode),
        };
      case 'proxy':
        return {
          url: `${proxyOrigin}/v1/chat/completions`,
          headers: directHeaders,
          body: chatBody('bench-upstream', mode),
        };
      case 'gateway':
        return {
          url: `${gw.httpUrl}/v1/chat/completions`,
          headers: svcHeaders(gw),
          body: chatBody(gw.model, mode),
        };
      case 'default':
        return {
          url: `${def.httpUrl}/v1/chat/completions`,
          headers: svcHeaders(def),
          body: chatBody(def.model, mode),
        };
      case 'portkey':
        return portkey && !portkeySkipped[mode]
          ? {
              url: `${portkey.origin}/v1/chat/completions`,
              headers: portkey.headers,
              body: chatBody('bench-upstream', mode),
            }
          : null;
      default: {
        const never: never = name;
        throw new Error(`unknown target ${never}`);
      }
    }
  };
  const rootPid: Record<TargetName, number | null> = {
    direct: null,
    proxy: proxyPid,
    gateway: gw.pid,
    default: def.pid,
    portkey: portkey?.pid ?? null,
  };

  const slowBody = (s: BenchGateway) => chatBody(s.slowModel, 'streamed');
  const slowDirect = await frameArrivals(
    `${mock.origin}/v1/chat/completions`,
    directHeaders,
    chatBody(SLOW_MODEL, 'streamed'),
  );
  const slowGateway = await frameArrivals(`${gw.httpUrl}/v1/chat/completions`, svcHeaders(gw), slowBody(gw));
  const slowDefault = await frameArrivals(
    `${def.httpUrl}/v1/chat/completions`,
    svcHeaders(def),
    slowBody(def),
  );
  const relay = { gateway: relayVerdict(slowGateway), default: relayVerdict(slowDefault) };

  // From here every request npm start serves is counted, and must become queryable (SPEC 6).
  await new Promise((r) => setTimeout(r, 50));
  const countFrom = new Date();
  const defaultTotals = { served: 0, sent: 0 };
  const countDefault = (r: { answered: number; sent: number }) => {
    defaultTotals.served += r.answered;
    defaultTotals.sent += r.sent;
  };
  const queryApi = { httpUrl: def.httpUrl, orgId: def.orgId, adminToken: def.adminToken };

  // What npm start costs with no load, and with the lag probes alone (4 requests a second and
  // their polls): the probes' share of a run's CPU is this difference over the run's requests.
  const IDLE_SECONDS = 3;
  const idleMeter = meterTree(def.pid);
  await idleMeter.start();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1_000));
  const idle = await idleMeter.read();
  await idleMeter.stop();
  const probeOnlyMeter = meterTree(def.pid);
  await probeOnlyMeter.start();
  const probeOnly = startLagProbe(queryApi, target('default', MODES[0]!)!);
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1_000));
  const probeOnlyServed = await probeOnly.stop();
  countDefault({ answered: probeOnlyServed, sent: probeOnlyServed });
  const probeOnlyUsage = await probeOnlyMeter.read();
  await probeOnlyMeter.stop();
  const probeOnlyLags = await probeOnly.settle();
  const background = {
    idleCores: idle.appCpu / IDLE_SECONDS,
    idlePostgresCores: idle.postgresCpu / IDLE_SECONDS,
    probeCores: probeOnlyUsage.appCpu / IDLE_SECONDS,
    probeLagMax: Math.max(...probeOnlyLags.lags),
  };
  // Over the whole bench, for the highest RSS sampled (warm-ups included).
  const wholeDefault = meterTree(def.pid);
  const wholeGateway = meterTree(gw.pid);
  await wholeDefault.start();
  await wholeGateway.start();

  if (JIT_WARMUP > 0) {
    for (const mode of MODES)
      for (const name of TARGETS) {
        const t = target(name, mode);
        if (!t) continue;
        interrupt.check();
        const r = await runLoad(t, 32, JIT_WARMUP);
        if (name === 'default') countDefault(r);
      }
    console.log(`warmed every target up with ${JIT_WARMUP} s of 32-connection load per mode`);
  }

  const measure = async (name: TargetName, t: LoadTarget, connections: number): Promise<Measured> => {
    const warmStart = new Date();
    const warm = await runLoad(t, connections, WARMUP);
    // The warm-up's records are ingested before the meter starts, so they cost the run nothing.
    if (name === 'default') {
      countDefault(warm);
      await untilQueryable(queryApi, warmStart, warm.answered, CATCH_UP_TIMEOUT_MS);
    }
    const pid = rootPid[name];
    const meter = pid === null ? null : meterTree(pid);
    await meter?.start();
    const runStart = new Date();
    const probe = name === 'default' ? startLagProbe(queryApi, t) : null;
    const result = await runLoad(t, connections, DURATION);
    const usage = (await meter?.read()) ?? null;
    const loadEnd = performance.now();
    const served = result.answered + ((await probe?.stop()) ?? 0);
    let caughtUpSeconds: number | null = null;
    let throughCatchUp: TreeUsage | null = null;
    let lag: LagResult | null = null;
    if (probe) {
      countDefault({ answered: served, sent: result.sent + (served - result.answered) });
      const [done, lags] = await Promise.all([
        untilQueryable(queryApi, runStart, served, CATCH_UP_TIMEOUT_MS).then(async (d) => ({
          ...d,
          at: performance.now(),
          usage: (await meter?.read()) ?? null,
        })),
        probe.settle(),
      ]);
      lag = lags;
      caughtUpSeconds = done.seconds === null ? null : (done.at - loadEnd) / 1_000;
      throughCatchUp = done.usage;
    }
    await meter?.stop();
    return { ...result, usage, throughCatchUp, caughtUpSeconds, lag, served };
  };

  const runs: Run[] = [];
  for (const mode of MODES) {
    for (const connections of CONNECTIONS) {
      const run: Run = { mode, connections, results: {} };
      for (const name of TARGETS) {
        const t = target(name, mode);
        interrupt.check();
        if (t) run.results[name] = await measure(name, t, connections);
      }
      runs.push(run);
      const r = run.results;
      const failures = TARGETS.filter((n) => r[n]?.failed).map((n) => `${LABEL[n]}: ${r[n]!.failures}`);
      console.log(
        `${mode} c=${connections}: ${TARGETS.filter((n) => r[n])
          .map((n) => `${LABEL[n]} ${rate(r[n]!.requestsPerSecond)} req/s`)
          .join(
            ', ',
          )} (load ${loadavg()[0]!.toFixed(2)})${failures.length ? `  FAILED: ${failures.join('; ')}` : ''}`,
      );
    }
  }
  const loadAfter = loadavg()[0]!;

  // Nothing lost: every request npm start answered is queryable. A request the load generator cut
  // off at the end of a run (written, never answered) may or may not have a row, so the rows may
  // exceed the answered count by at most those.
  const finalCheck = await untilQueryable(queryApi, countFrom, defaultTotals.served, CATCH_UP_TIMEOUT_MS);
  const defaultAtEnd = await wholeDefault.read();
  const gatewayAtEnd = await wholeGateway.read();
  await wholeDefault.stop();
  await wholeGateway.stop();
  const gwMetrics = await gatewayMetrics(gw.httpUrl);
  const defMetricsText = await (await fetch(`${def.httpUrl}/metrics`)).text();
  const seriesSum = (name: string) => {
    const lines = defMetricsText.split('\n').filter((l) => l.startsWith(name) && !l.startsWith('#'));
    return lines.length === 0 ? Number.NaN : lines.reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  };

  const header = [
    'mode',
    'conns',
    'target',
    'req/s',
    'p50 ms',
    'p99 ms',
    'p50 ovh ms',
    'p99 ovh ms',
    'CPU ms/req',
    'CPU+ingest ms/req',
    'PG CPU ms/req',
    'RSS MB end/peak',
    'lag s p95/max',
    'caught up s',
    'non-2xx',
  ];
  const rows: string[][] = [];
  for (const run of runs) {
    const direct = run.results.direct!;
    for (const name of TARGETS) {
      const m = run.results[name];
      if (!m) {
        if (name === 'portkey' && portkey && portkeySkipped[run.mode])
          rows.push([
            run.mode,
            String(run.connections),
            LABEL[name],
            'not measured',
            ...header.slice(4).map(() => ''),
          ]);
        continue;
      }
      const isDirect = name === 'direct';
      const full = m.throughCatchUp;
      rows.push([
        run.mode,
        String(run.connections),
        LABEL[name],
        rate(m.requestsPerSecond),
        ms(m.p50Ms),
        ms(m.p99Ms, 2),
        isDirect ? '-' : ms(m.p50Ms - direct.p50Ms),
        isDirect ? '-' : ms(m.p99Ms - direct.p99Ms, 2),
        m.usage ? ms(perRequestMs(m.usage.appCpu, m.served)) : '-',
        full ? ms(perRequestMs(full.appCpu, m.served)) : '-',
        full ? ms(perRequestMs(full.postgresCpu, m.served)) : '-',
        m.usage ? `${m.usage.appRssEnd.toFixed(0)}/${m.usage.appRssPeak.toFixed(0)}` : '-',
        m.lag ? `${ms(quantile(m.lag.lags, 0.95), 2)}/${ms(Math.max(...m.lag.lags), 2)}` : '-',
        name === 'default' ? (m.caughtUpSeconds === null ? 'NO' : ms(m.caughtUpSeconds, 1)) : '-',
        String(m.failed),
      ]);
    }
  }
  printGrid(
    `bench/gateway: ${DURATION} s per run after ${WARMUP} s warm-up (and ${JIT_WARMUP} s at 32 connections per target and mode before the first); latency in ms to the last byte; overhead (ovh) = target - direct in the same run; svc from ${from}; gateway alone on ${gatewayAloneBus() === 'nats' ? 'NATS' : 'the Postgres-table bus'} + server PostgreSQL at SVC_LOG_LEVEL=warn, npm start at its shipped defaults; load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after.
CPU ms/req: user + system CPU of the target's whole process tree (PostgreSQL processes excepted) over the run, from /proc, per request served. CPU+ingest (npm start): the same from the start of the run until every request of it was queryable, so its ingest is counted in full; PG CPU: the embedded PostgreSQL's processes over that window. RSS: sum of VmRSS of the tree's non-PostgreSQL processes, at the end of the run / highest sampled every 250 ms. lag: served to queryable of probe requests sent beside the load, one at a time on a 250 ms tick, looked up on GET /api/requests/:id to 100 ms resolution (their CPU is in npm start's, see the probe line under the targets); caught up: seconds after the load until all the run's requests were queryable.`,
    header,
    rows,
  );
  printArrivals(slowDirect, [
    { label: 'gateway alone', arrivals: slowGateway },
    { label: 'npm start', arrivals: slowDefault },
  ]);

  const probeCpuPerSecond = Math.max(0, background.probeCores - background.idleCores);
  const checks = targetChecks(runs, probeCpuPerSecond, {
    defaultRssEnd: defaultAtEnd.appRssEnd,
    defaultRssPeak: defaultAtEnd.appRssPeak,
    gatewayRssEnd: gatewayAtEnd.appRssEnd,
    gatewayRssPeak: gatewayAtEnd.appRssPeak,
  });
  const failed = runs.reduce((n, r) => n + TARGETS.reduce((k, t) => k + (r.results[t]?.failed ?? 0), 0), 0);
  printTable('Targets (issue checks, computed from the runs above)', [
    ...checks,
    {
      metric: 'npm start: every answered request queryable at the end (SPEC 6)',
      measured: `${defaultTotals.served} answered, ${finalCheck.queryable} queryable (${defaultTotals.sent - defaultTotals.served} cut off unanswered by the load generator's stops), ${finalCheck.seconds === null ? 'not reached' : `held ${ms(finalCheck.seconds, 1)} s after the last run's check`}`,
      target: `answered <= queryable <= written (${defaultTotals.sent})`,
      met:
        finalCheck.seconds !== null &&
        finalCheck.queryable >= defaultTotals.served &&
        finalCheck.queryable <= defaultTotals.sent,
    },
    {
      metric: 'npm start: ingest suppressed writes / dead letters (its /metrics)',
      measured: `${seriesSum('svc_ingest_clickhouse_suppressed_writes_total')} / ${seriesSum('svc_ingest_dlq_total')}`,
      target: '0 / 0 (NaN: not exported by this process)',
      met:
        seriesSum('svc_ingest_clickhouse_suppressed_writes_total') === 0 &&
        !(seriesSum('svc_ingest_dlq_total') > 0),
    },
    {
      metric: 'npm start with no load: CPU of its processes / of its PostgreSQL',
      measured: `${(100 * background.idleCores).toFixed(1)} % / ${(100 * background.idlePostgresCores).toFixed(1)} % of a core`,
    },
    {
      metric: 'npm start with the lag probes alone (no load)',
      measured: `${(100 * background.probeCores).toFixed(1)} % of a core, ${ms(1e3 * (background.probeCores - background.idleCores), 1)} ms of CPU a second above idle (a run's share per request: that / its req/s); max lag ${ms(background.probeLagMax, 2)} s`,
    },
    {
      metric: 'gateway alone: request.completed records published / spooled / pending',
      measured: `${gwMetrics.records.published} / ${gwMetrics.records.spooled} / ${gwMetrics.records.pending}`,
    },
    {
      metric: 'streamed reply relayed chunk by chunk (gateway alone / npm start)',
      measured: `max lag ${ms(relay.gateway.maxLagMs, 1)} / ${ms(relay.default.maxLagMs, 1)} ms`,
      target: 'each chunk <= 50 ms after written',
      met: relay.gateway.ok && relay.default.ok,
    },
    {
      metric: 'non-2xx, errors and timeouts, all runs',
      measured: String(failed),
      target: '0',
      met: failed === 0,
    },
  ]);
  console.log(`finished in ${((performance.now() - started) / 1_000).toFixed(0)} s`);
  if (failed > 0) {
    const detail = runs.flatMap((r) =>
      TARGETS.filter((t) => r.results[t]?.failed).map(
        (t) => `${r.mode} c=${r.connections} ${LABEL[t]}: ${r.results[t]!.failures}`,
      ),
    );
    throw new Error(`the bench is invalid, requests failed:\n  ${detail.join('\n  ')}`);
  }
} catch (err) {
  await interrupt.finish(err);
}
await interrupt.finish();
if (PROFILE_DIR) console.log(`gateway CPU profile written to ${resolve(PROFILE_DIR)}`);

/** The issue's targets 1 and 2, from the runs of this process; a target whose runs are missing says so. */
function targetChecks(
  runs: Run[],
  probeCpuPerSecond: number,
  memory: { defaultRssEnd: number; defaultRssPeak: number; gatewayRssEnd: number; gatewayRssPeak: number },
) {
  const at = (mode: Mode, connections: number) =>
    runs.find((r) => r.mode === mode && r.connections === connections)?.results;
  const cpu = (m: Measured | undefined, withIngest = false) => {
    const u = withIngest ? m?.throughCatchUp : m?.usage;
    return u && m ? perRequestMs(u.appCpu, m.served) : Number.NaN;
  };
  const notRun = (metric: string) => ({ metric, measured: 'not run' });
  const checks = [];
  for (const mode of MODES) {
    const one = at(mode, 1);
    const many = at(mode, 32);
    // Target 1: npm start against gateway alone and Portkey.
    if (one?.default && one.gateway && one.direct) {
      const d = one.default.p50Ms - one.direct.p50Ms;
      const g = one.gateway.p50Ms - one.direct.p50Ms;
      checks.push({
        metric: `1 npm start c=1 ${mode} p50 overhead vs gateway alone + 0.2`,
        measured: `${ms(d)} ms vs ${ms(g)} ms + 0.2`,
        target: `<= ${ms(g + 0.2)} ms`,
        met: d <= g + 0.2,
      });
    } else checks.push(notRun(`1 npm start c=1 ${mode} p50 overhead`));
    for (const run of [one, many]) {
      if (!run?.default || !run.gateway) continue;
      const c = run === one ? 1 : 32;
      const d = cpu(run.default, true);
      const g = cpu(run.gateway);
      const probes = (1e3 * probeCpuPerSecond) / run.default.requestsPerSecond;
      checks.push({
        metric: `1 npm start c=${c} ${mode} CPU/req incl. its ingest vs 1.5x gateway alone`,
        measured: `${ms(d)} ms vs ${ms(g)} ms (${(d / g).toFixed(2)}x; the lag probes' share about ${ms(probes)} ms)`,
        target: '<= 1.5x',
        met: d <= 1.5 * g,
      });
    }
    for (const run of [one, many]) {
      const lag = run?.default?.lag;
      if (!lag) continue;
      const max = Math.max(...lag.lags);
      checks.push({
        metric: `1 npm start c=${run === one ? 1 : 32} ${mode} ingest lag (served to queryable)`,
        measured: `max ${ms(max, 2)} s, p95 ${ms(quantile(lag.lags, 0.95), 2)} s (${lag.lags.length} probes${lag.unresolved ? `, ${lag.unresolved} never queryable` : ''})`,
        target: '< 2 s throughout',
        met: lag.unresolved === 0 && lag.lags.length > 0 && max < 2,
      });
    }
    if (one?.portkey && one.default && one.direct) {
      const d = one.default.p50Ms - one.direct.p50Ms;
      const p = one.portkey.p50Ms - one.direct.p50Ms;
      checks.push({
        metric: `1 npm start c=1 ${mode} p50 overhead vs half of Portkey's`,
        measured: `${ms(d)} ms vs ${ms(p)} ms / 2`,
        target: `<= ${ms(p / 2)} ms`,
        met: d <= p / 2,
      });
    } else checks.push(notRun(`1 npm start c=1 ${mode} p50 overhead vs half of Portkey's`));
    if (many?.portkey && many.default) {
      const d = many.default.requestsPerSecond;
      const p = many.portkey.requestsPerSecond;
      checks.push({
        metric: `1 npm start c=32 ${mode} throughput vs twice Portkey's`,
        measured: `${rate(d)} vs ${rate(p)} req/s (${(d / p).toFixed(2)}x)`,
        target: '>= 2x',
        met: d >= 2 * p,
      });
    } else checks.push(notRun(`1 npm start c=32 ${mode} throughput vs twice Portkey's`));
    // Target 2: gateway alone against the bare pass-through.
    const limit = mode === 'buffered' ? 1.3 : 1.5;
    for (const run of [one, many]) {
      if (!run?.gateway || !run.proxy) continue;
      const g = cpu(run.gateway);
      const p = cpu(run.proxy);
      checks.push({
        metric: `2 gateway alone c=${run === one ? 1 : 32} ${mode} CPU/req vs ${limit}x bare proxy`,
        measured: `${ms(g)} ms vs ${ms(p)} ms (${(g / p).toFixed(2)}x)`,
        target: `<= ${limit}x`,
        met: g <= limit * p,
      });
    }
    if (one?.gateway && one.direct) {
      const v = one.gateway.p99Ms - one.direct.p99Ms;
      checks.push({
        metric: `2 gateway alone c=1 ${mode} p99 overhead`,
        measured: `${ms(v, 2)} ms`,
        target: '< 2 ms',
        met: v < 2,
      });
    }
  }
  checks.push(
    {
      metric: '1 npm start RSS (node processes) at the end',
      measured: `${memory.defaultRssEnd.toFixed(0)} MB (peak sampled ${memory.defaultRssPeak.toFixed(0)} MB)`,
      target: '< 400 MB',
      met: memory.defaultRssEnd < 400,
    },
    {
      metric: '2 gateway alone RSS after the last run',
      measured: `${memory.gatewayRssEnd.toFixed(0)} MB (peak sampled ${memory.gatewayRssPeak.toFixed(0)} MB)`,
      target: '< 150 MB',
      met: memory.gatewayRssEnd < 150,
    },
  );
  return checks;
}
