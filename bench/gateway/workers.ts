/**
 * `npm run bench:gateway -- --workers N` (issue 26): `svc serve --roles gateway` in 1 worker and in
 * N workers (`SVC_SERVE_WORKERS`), side by side in one run, against the same mock upstream, with
 * the mock alone (direct) as the ceiling of this machine. Each gateway is measured alone: the other
 * is idle. Throughput is what the load generator saw; CPU ms/req is user + system CPU of the
 * gateway's whole process tree (supervisor and workers) from /proc, per request answered.
 *
 * On a machine with fewer cores than N + 2 the load generator, the mock and the workers share the
 * cores, and N workers cannot reach N times one: the ratio says how much of the machine the
 * workers turned into throughput, and the CPU per request what the extra processes cost.
 */
import { availableParallelism, loadavg } from 'node:os';
import { meterTree } from '../lib/proc.js';
import { type LoadResult, runLoad } from './load.js';
import {
  type BenchGateway,
  cleanupStack,
  onInterrupt,
  prepareBuild,
  startGateway,
  startMock,
} from './processes.js';

const DURATION = Number(process.env.BENCH_GATEWAY_DURATION ?? 6);
const JIT_WARMUP = Number(process.env.BENCH_GATEWAY_JIT_WARMUP ?? 5);
const CONNECTIONS = (process.env.BENCH_GATEWAY_WORKERS_CONNECTIONS ?? '32,64').split(',').map(Number);
const MODES = ['buffered', 'streamed'] as const;
type Mode = (typeof MODES)[number];

const chatBody = (model: string, mode: Mode): string =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    ...(mode === 'streamed' ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

const rate = (v: number) => Math.round(v).toLocaleString('en-US');
const ms = (v: number, digits = 3) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

interface Measured {
  load: LoadResult;
  cpuMsPerRequest: number;
}

export const runWorkersBench = async (workers: number): Promise<void> => {
  if (!Number.isInteger(workers) || workers < 2)
    throw new Error(`--workers takes a whole number of 2 or more (got ${workers})`);
  const cleanup = cleanupStack();
  const interrupt = onInterrupt(cleanup);
  const loadBefore = loadavg()[0]!;
  try {
    const mock = await startMock(cleanup, false);
    interrupt.check();
    const from = await prepareBuild();
    const counts = [1, workers];
    const gateways = new Map<number, BenchGateway>();
    for (const count of counts) {
      interrupt.check();
      const gw = await startGateway(cleanup, mock.origin, from, {
        nodeArgs: [],
        env: { SVC_SERVE_WORKERS: String(count) },
      });
      gateways.set(count, gw);
      console.log(
        `svc serve --roles gateway --workers ${count} from ${from} on ${gw.httpUrl} (supervisor pid ${gw.pid})`,
      );
    }
    const headers = (gw: BenchGateway | null) => ({
      authorization: gw ? `Bearer ${gw.apiKey}` : 'Bearer sk-bench-byok',
      'content-type': 'application/json',
    });
    const targetOf = (gw: BenchGateway | null, mode: Mode) => ({
      url: gw ? `${gw.httpUrl}/v1/chat/completions` : `${mock.origin}/v1/chat/completions`,
      headers: headers(gw),
      body: chatBody(gw ? gw.model : 'bench-upstream', mode),
    });
    const measure = async (gw: BenchGateway | null, mode: Mode, connections: number): Promise<Measured> => {
      interrupt.check();
      const meter = gw ? meterTree(gw.pid) : null;
      await meter?.start();
      const load = await runLoad(targetOf(gw, mode), connections, DURATION);
      const usage = await meter?.read();
      await meter?.stop();
      if (load.failed > 0) throw new Error(`a run failed: ${load.failures}`);
      return { load, cpuMsPerRequest: usage ? (1e3 * usage.appCpu) / load.answered : Number.NaN };
    };
    // Every worker's request path is optimized before anything is measured.
    for (const gw of gateways.values())
      for (const mode of MODES) await runLoad(targetOf(gw, mode), Math.max(...CONNECTIONS), JIT_WARMUP);

    const rows: string[][] = [];
    for (const mode of MODES)
      for (const connections of CONNECTIONS) {
        const direct = await measure(null, mode, connections);
        const one = await measure(gateways.get(1)!, mode, connections);
        const many = await measure(gateways.get(workers)!, mode, connections);
        rows.push([
          mode,
          String(connections),
          rate(direct.load.requestsPerSecond),
          rate(one.load.requestsPerSecond),
          rate(many.load.requestsPerSecond),
          `${(many.load.requestsPerSecond / one.load.requestsPerSecond).toFixed(2)}x`,
          `${ms(one.load.p50Ms, 2)} / ${ms(one.load.p99Ms, 2)}`,
          `${ms(many.load.p50Ms, 2)} / ${ms(many.load.p99Ms, 2)}`,
          ms(one.cpuMsPerRequest),
          ms(many.cpuMsPerRequest),
        ]);
      }
    const header = [
      'mode',
      'conns',
      'direct req/s',
      '1 worker req/s',
      `${workers} workers req/s`,
      `${workers}/1`,
      '1: p50 / p99 ms',
      `${workers}: p50 / p99 ms`,
      '1: CPU ms/req',
      `${workers}: CPU ms/req`,
    ];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (c: string[]) => `| ${c.map((v, i) => v.padStart(widths[i]!)).join(' | ')} |`;
    console.log(
      `\nbench:gateway --workers ${workers}: svc serve --roles gateway (server PostgreSQL, NATS) in 1 and ${workers} worker processes, ${DURATION} s per run after ${JIT_WARMUP} s warm-up each; ${availableParallelism()} cores shared by the load generator, the mock and the gateway; load average (1 min) ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after.\n`,
    );
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
    console.log('');
  } catch (err) {
    await interrupt.finish(err);
  }
  await interrupt.finish();
};
