/**
 * Gateway overhead: the same autocannon load at 1, 32 and 128 connections,
 * buffered and streamed, sent direct to a mock OpenAI upstream, through a bare fastify + undici
 * proxy (the ceiling: Node's own HTTP plumbing on this machine), and through `svc serve` (BYOK
 * traffic, request records on), then the targets, and a check that a slow stream is relayed
 * chunk by chunk. The gateway is a fresh `svc serve --roles gateway` from the compiled build, on
 * its own database; everything started here is removed at the end, on failure too.
 *
 *   npm run bench:gateway   BENCH_GATEWAY_DURATION seconds per run (default 6),
 *                           BENCH_GATEWAY_MOCK=inline runs the mock in this process,
 *                           BENCH_GATEWAY_BUS=nats publishes request records to NATS
 *                             (SVC_TEST_NATS_URL) instead of the Postgres-table bus,
 *                           BENCH_GATEWAY_FROM=src runs the gateway through tsx,
 *                           BENCH_GATEWAY_SKIP_BUILD=1 uses dist/ as it is,
 *                           BENCH_GATEWAY_JIT_WARMUP seconds of 32-connection load on every
 *                             target before the runs (default 5),
 *                           BENCH_GATEWAY_ONLY=buffered|streamed, BENCH_GATEWAY_CONNECTIONS=1,32
 *                             narrow the runs,
 *                           BENCH_GATEWAY_CPU_PROF=<dir> writes a CPU profile of the gateway there
 *                             (summarise it with bench/gateway/profile-top.ts).
 *
 * Load generator, mock and gateway share this machine's 2 cores, so every number here includes
 * their contention; the direct column pays it too, which keeps the comparison honest.
 */
import { mkdir } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { printTable } from '../lib/report.js';
import { type LoadResult, type LoadTarget, runLoad } from './load.js';
import { SLOW_MODEL } from './mock-upstream.js';
import {
  cleanupStack,
  cpuSeconds,
  gatewayMetrics,
  rssMb,
  startBareProxy,
  startGateway,
  startMock,
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
const ALL_MODES = ['buffered', 'streamed'] as const;
type Mode = (typeof ALL_MODES)[number];
const CONNECTIONS = (process.env.BENCH_GATEWAY_CONNECTIONS ?? '1,32,128').split(',').map(Number);
const MODES = ALL_MODES.filter(
  (m) => !process.env.BENCH_GATEWAY_ONLY || m === process.env.BENCH_GATEWAY_ONLY,
);
const PROFILE_DIR = process.env.BENCH_GATEWAY_CPU_PROF;

const chatBody = (model: string, mode: Mode): string =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    // Asked for on both paths: the gateway always asks upstream for usage, so the direct run
    // must too or it would move fewer bytes than the gateway's upstream leg.
    ...(mode === 'streamed' ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

/** `cpu`: seconds of CPU the proxy or gateway used during the measured run (NaN for direct runs). */
type Measured = LoadResult & { cpu: number; wallSeconds: number };

interface Run {
  mode: Mode;
  connections: number;
  direct: Measured;
  proxy: Measured;
  gateway: Measured;
}

const ms = (v: number, digits = 3) => v.toFixed(digits);
const rate = (v: number) => Math.round(v).toLocaleString('en-US');

const printGrid = (title: string, header: string[], rows: string[][]): void => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padStart(widths[i]!)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log('');
};

const printArrivals = (direct: Arrival[], gateway: Arrival[]): void => {
  const lag = (a: Arrival | undefined) => (a?.lagMs == null ? '' : ms(a.lagMs, 1));
  const rows = Array.from({ length: Math.max(direct.length, gateway.length) }, (_, i) => [
    String(i + 1),
    gateway[i]?.kind ?? direct[i]?.kind ?? '',
    direct[i] ? ms(direct[i].atMs, 1) : '-',
    lag(direct[i]),
    gateway[i] ? ms(gateway[i].atMs, 1) : '-',
    lag(gateway[i]),
  ]);
  printGrid(
    'Relay check: each SSE frame of a slow stream (a content chunk every 100 ms); at = ms after the request, lag = ms after the mock wrote it',
    ['#', 'frame', 'direct at', 'direct lag', 'gateway at', 'gateway lag'],
    rows,
  );
};

const cleanup = cleanupStack();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up`);
    void cleanup.run().finally(() => process.exit(130));
  });
}

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
  const gw = await startGateway(cleanup, mock.origin, {
    nodeArgs: PROFILE_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROFILE_DIR)}`, '--cpu-prof-interval=200']
      : [],
    env: {},
  });
  const idle = await rssMb(gw.pid);
  const idleMetrics = await gatewayMetrics(gw.httpUrl);
  console.log(
    `svc serve --roles gateway from ${gw.from} on ${gw.httpUrl} (pid ${gw.pid}; bus ${process.env.BENCH_GATEWAY_BUS === 'nats' ? 'NATS' : 'Postgres table'}; after start-up RSS ${idle.rss.toFixed(1)} MB, V8 heap used ${idleMetrics.heapUsed.toFixed(1)} MB), serving through the mock`,
  );

  const gatewayHeaders = { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' };
  const directHeaders = { authorization: 'Bearer sk-bench-byok', 'content-type': 'application/json' };
  const directUrl = `${mock.origin}/v1/chat/completions`;
  const proxyUrl = `${proxyOrigin}/v1/chat/completions`;
  const gatewayUrl = `${gw.httpUrl}/v1/chat/completions`;

  const slowDirect = await frameArrivals(directUrl, directHeaders, chatBody(SLOW_MODEL, 'streamed'));
  const slowGateway = await frameArrivals(gatewayUrl, gatewayHeaders, chatBody(gw.slowModel, 'streamed'));
  const relay = relayVerdict(slowGateway);

  const runs: Run[] = [];
  const targets = (mode: Mode): LoadTarget[] => [
    { url: directUrl, headers: directHeaders, body: chatBody('bench-upstream', mode) },
    { url: proxyUrl, headers: directHeaders, body: chatBody('bench-upstream', mode) },
    { url: gatewayUrl, headers: gatewayHeaders, body: chatBody(gw.model, mode) },
  ];
  if (JIT_WARMUP > 0) {
    for (const mode of MODES) for (const target of targets(mode)) await runLoad(target, 32, JIT_WARMUP);
    console.log(`warmed every target up with ${JIT_WARMUP} s of 32-connection load per mode`);
  }
  for (const mode of MODES) {
    const [direct, proxy, gateway] = targets(mode) as [LoadTarget, LoadTarget, LoadTarget];
    for (const connections of CONNECTIONS) {
      const measure = async (target: LoadTarget, pid: number | null) => {
        await runLoad(target, connections, WARMUP);
        const cpuBefore = pid === null ? 0 : await cpuSeconds(pid);
        const wallStart = performance.now();
        const result = await runLoad(target, connections, DURATION);
        const cpu = pid === null ? Number.NaN : (await cpuSeconds(pid)) - cpuBefore;
        return { ...result, cpu, wallSeconds: (performance.now() - wallStart) / 1_000 };
      };
      const run: Run = {
        mode,
        connections,
        direct: await measure(direct, null),
        proxy: await measure(proxy, proxyPid),
        gateway: await measure(gateway, gw.pid),
      };
      runs.push(run);
      console.log(
        `${mode} c=${connections}: direct ${rate(run.direct.requestsPerSecond)} req/s, bare proxy ${rate(run.proxy.requestsPerSecond)} req/s, gateway ${rate(run.gateway.requestsPerSecond)} req/s (load ${loadavg()[0]!.toFixed(2)})` +
          (run.gateway.failed || run.direct.failed || run.proxy.failed
            ? `  FAILED: ${run.gateway.failures || run.proxy.failures || run.direct.failures}`
            : ''),
      );
    }
  }
  const loadAfter = loadavg()[0]!;
  const memory = await rssMb(gw.pid);
  // V8 collects old garbage once the process idles: what is left after that is what the gateway holds.
  await new Promise((r) => setTimeout(r, 10_000));
  const rested = await rssMb(gw.pid);
  const after = await gatewayMetrics(gw.httpUrl);

  printGrid(
    `bench/gateway: ${DURATION} s per run after ${WARMUP} s warm-up (and ${JIT_WARMUP} s at 32 connections per target and mode before the first); latency in ms to the last byte; mock ${mock.where.startsWith('child') ? 'in a child process' : 'in-process'}; gateway from ${gw.from}; load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after; gw CPU % of one core`,
    [
      'mode',
      'conns',
      'direct req/s',
      'proxy req/s',
      'gw req/s',
      'gw/direct %',
      'gw/proxy %',
      'direct p50',
      'proxy p50',
      'gw p50',
      'gw p99',
      'gw-direct p50 ms',
      'gw-proxy p50 ms',
      'gw CPU %',
      'proxy CPU us/req',
      'gw CPU us/req',
      'gw non-2xx',
    ],
    runs.map((r) => [
      r.mode,
      String(r.connections),
      rate(r.direct.requestsPerSecond),
      rate(r.proxy.requestsPerSecond),
      rate(r.gateway.requestsPerSecond),
      ((100 * r.gateway.requestsPerSecond) / r.direct.requestsPerSecond).toFixed(1),
      ((100 * r.gateway.requestsPerSecond) / r.proxy.requestsPerSecond).toFixed(1),
      ms(r.direct.p50Ms),
      ms(r.proxy.p50Ms),
      ms(r.gateway.p50Ms),
      ms(r.gateway.p99Ms, 2),
      ms(r.gateway.p50Ms - r.direct.p50Ms),
      ms(r.gateway.p50Ms - r.proxy.p50Ms),
      ((100 * r.gateway.cpu) / r.gateway.wallSeconds).toFixed(0),
      ((1e6 * r.proxy.cpu) / r.proxy.ok).toFixed(0),
      ((1e6 * r.gateway.cpu) / r.gateway.ok).toFixed(0),
      String(r.gateway.failed),
    ]),
  );
  printArrivals(slowDirect, slowGateway);

  const at = (mode: Mode, connections: number) =>
    runs.find((r) => r.mode === mode && r.connections === connections);
  const overhead = (mode: Mode, limit: number) => {
    const r = at(mode, 1);
    if (!r) return { metric: `p50 overhead, 1 connection, ${mode}`, measured: 'not run' };
    const v = r.gateway.p50Ms - r.direct.p50Ms;
    return {
      metric: `p50 overhead, 1 connection, ${mode}`,
      measured: `${ms(v)} ms`,
      target: `<= ${limit} ms`,
      met: v <= limit,
    };
  };
  const ratio = (mode: Mode) => {
    const r = at(mode, 32);
    if (!r) return { metric: `gateway / direct throughput, 32 connections, ${mode}`, measured: 'not run' };
    const v = (100 * r.gateway.requestsPerSecond) / r.direct.requestsPerSecond;
    return {
      metric: `gateway / direct throughput, 32 connections, ${mode}`,
      measured: `${v.toFixed(1)} %`,
      target: '>= 30 %',
      met: v >= 30,
    };
  };
  const failed = runs.reduce((n, r) => n + r.gateway.failed + r.proxy.failed + r.direct.failed, 0);
  printTable('Targets', [
    overhead('buffered', 0.3),
    overhead('streamed', 0.5),
    ratio('buffered'),
    ratio('streamed'),
    {
      metric: 'gateway RSS after the load (VmRSS)',
      measured: `${memory.rss.toFixed(1)} MB (peak ${memory.peak.toFixed(1)} MB)`,
      target: '< 150 MB',
      met: memory.rss < 150,
    },
    {
      metric: 'gateway RSS 10 s after the load',
      measured: `${rested.rss.toFixed(1)} MB (start-up ${idle.rss.toFixed(1)} MB)`,
    },
    {
      metric: '  of which V8 heap used / heap total / external',
      measured: `${after.heapUsed.toFixed(1)} / ${after.heapTotal.toFixed(1)} / ${after.external.toFixed(1)} MB`,
    },
    {
      metric: 'request.completed records published / spooled / pending',
      measured: `${after.records.published} / ${after.records.spooled} / ${after.records.pending}`,
    },
    {
      metric: 'streamed reply relayed chunk by chunk',
      measured: `max lag ${ms(relay.maxLagMs, 1)} ms; first content chunk at ${ms(relay.firstContentMs, 1)} ms (~100-150)`,
      target: 'each chunk <= 50 ms after written',
      met: relay.ok,
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
    const detail = runs
      .flatMap((r) => [
        r.direct.failed ? `${r.mode} c=${r.connections} direct: ${r.direct.failures}` : '',
        r.proxy.failed ? `${r.mode} c=${r.connections} bare proxy: ${r.proxy.failures}` : '',
        r.gateway.failed ? `${r.mode} c=${r.connections} gateway: ${r.gateway.failures}` : '',
      ])
      .filter(Boolean);
    throw new Error(`the bench is invalid, requests failed:\n  ${detail.join('\n  ')}`);
  }
} finally {
  await cleanup.run();
}
if (PROFILE_DIR) console.log(`gateway CPU profile written to ${resolve(PROFILE_DIR)}`);
