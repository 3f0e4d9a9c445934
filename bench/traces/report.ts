import { readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { SPANS_PER_EXPORT, SPANS_PER_TRACE, TRACES_PER_EXPORT } from './exports.js';
import type { LoadResult } from './load.js';
import type { NatsStats } from './service.js';

/** The figures of bench:traces (run.ts) and how they are printed. */

export const TARGET_SPANS_PER_SECOND = 20_000;

export interface RequestPhase {
  requests: number;
  seconds: number;
  cpuSeconds: number;
  postgresSeconds: number;
  natsSeconds: number | null;
}

export interface Row {
  label: string;
  load: Omit<LoadResult, 'tracesBySession' | 'latencies' | 'refused'> & {
    refused: Record<string, number>;
    latencyMs: { p50: number; p99: number; max: number };
  };
  acceptedSeconds: number;
  /** Seconds from the first post until the last accepted span was seen queryable; null: never within the timeout. */
  endToEndSeconds: number | null;
  lagAtEndSeconds: number | null;
  queryableSpans: number;
  lost: number;
  /** Spans still missing by session when the drain timed out. */
  missingTraces: number;
  polls: number;
  /** CPU over the window (first post until all queryable) of the svc serve tree, non-PostgreSQL / PostgreSQL. */
  appCpuSeconds: number;
  postgresCpuSeconds: number;
  natsCpuSeconds: number | null;
  /** The bench's own CPU over the window (the load generator, /proc polling, the query polls' client side). */
  benchCpuSeconds: number;
  benchThreads: [string, number][];
  rssPeakMb: number;
  /** Of appCpuSeconds: the serving process (the route: decode, normalize, publish) and the data process (the projector). */
  serveCpuSeconds: number;
  dataCpuSeconds: number;
  /** Peak resident set (VmHWM) of each. */
  serveHwmMb: number;
  dataHwmMb: number;
  /** The same by thread name, largest first. */
  serveThreads: [string, number][];
  dataThreads: [string, number][];
  processes: number;
  requests: RequestPhase | null;
  /** The JetStream row's server: slow consumers cut off, redeliveries by consumer (at the end of the trace phase). */
  nats: NatsStats | null;
  /** `svc dlq list` at the end, by consumer and reason. */
  deadLetters: Record<string, number>;
  /** The service's warnings and errors, by message and context, when anything failed; and where its log was kept. */
  problems: [string, number][];
  logFile: string | null;
}

/** Warn-or-worse lines of the service's pino log, counted by message and context. */
export const problemsIn = async (logFile: string): Promise<[string, number][]> => {
  const counts = new Map<string, number>();
  for (const line of (await readFile(logFile, 'utf8').catch(() => '')).split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { level?: number; msg?: string; context?: string; err?: { message?: string } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if ((entry.level ?? 0) < 40) continue;
    const key = [entry.msg, entry.context, entry.err?.message?.slice(0, 160)].filter(Boolean).join(' | ');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
};

export interface ReportSettings {
  run: string;
  seconds: number;
  concurrency: number;
  payloadBytes: number;
  gzip: boolean;
  /** What svc ran: dist/ or the sources. */
  entry: string;
  drainMs: number;
  requests: number;
  json: boolean;
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const us = (seconds: number, n: number) => int((seconds * 1e6) / n);
const met = (r: Row) =>
  r.endToEndSeconds !== null && r.load.acceptedSpans / r.endToEndSeconds >= TARGET_SPANS_PER_SECOND;

/** Prints the rows: a table with the target line under it, or JSON with --json. */
export const printReport = (rows: Row[], settings: ReportSettings): void => {
  const { run, seconds, concurrency, payloadBytes, gzip, entry, drainMs, requests } = settings;
  if (settings.json) {
    console.log(
      JSON.stringify(
        {
          run,
          seconds,
          concurrency,
          spansPerExport: SPANS_PER_EXPORT,
          tracesPerExport: TRACES_PER_EXPORT,
          payloadBytes,
          gzip,
          cpus: cpus().length,
          loadAverage: loadavg(),
          targetSpansPerSecond: TARGET_SPANS_PER_SECOND,
          rows: rows.map((r) => ({
            ...r,
            spansPerSecondAccepted: r.load.acceptedSpans / r.acceptedSeconds,
            spansPerSecondEndToEnd:
              r.endToEndSeconds === null ? null : r.load.acceptedSpans / r.endToEndSeconds,
            cpuMicrosPerSpan: ((r.appCpuSeconds + r.postgresCpuSeconds) * 1e6) / r.load.acceptedSpans,
            serveThreads: Object.fromEntries(r.serveThreads),
            dataThreads: Object.fromEntries(r.dataThreads),
            benchThreads: Object.fromEntries(r.benchThreads),
            targetMet: met(r),
          })),
        },
        null,
        2,
      ),
    );
  } else {
    const header = [
      'bus',
      'spans accepted',
      'spans/s accepted',
      'spans/s end to end',
      'CPU µs/span (app + PG)',
      'bus server µs/span',
      'RSS peak',
      'lag at end',
      'lost',
      'request ingest req/s',
      'µs/request (app + PG)',
    ];
    const cells = rows.map((r) => {
      const spans = r.load.acceptedSpans;
      const q = r.requests;
      return [
        r.label,
        `${int(spans)} (${int(r.load.acceptedExports)} exports${r.load.exports > r.load.acceptedExports ? `, ${r.load.exports - r.load.acceptedExports} refused` : ''})`,
        int(spans / r.acceptedSeconds),
        r.endToEndSeconds === null ? 'not reached' : int(spans / r.endToEndSeconds),
        `${us(r.appCpuSeconds + r.postgresCpuSeconds, spans)} (${us(r.appCpuSeconds, spans)} + ${us(r.postgresCpuSeconds, spans)})` +
          (r.endToEndSeconds === null ? ', to the timeout' : ''),
        r.natsCpuSeconds === null ? 'in PG' : `${us(r.natsCpuSeconds, spans)} (nats-server)`,
        `${int(r.rssPeakMb)} MB`,
        r.lagAtEndSeconds === null ? `> ${drainMs / 1000} s` : `${r.lagAtEndSeconds.toFixed(1)} s`,
        r.lost === 0 ? '0' : `FAIL: ${int(r.lost)} of ${int(spans)}`,
        q ? int(q.requests / q.seconds) : '-',
        q
          ? `${us(q.cpuSeconds + q.postgresSeconds, q.requests)} (${us(q.cpuSeconds, q.requests)} + ${us(q.postgresSeconds, q.requests)})`
          : '-',
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
    const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(
      `\nTrace ingest end to end, svc serve as npm start runs it (${entry}): ` +
        `${seconds} s of load, ${concurrency} exports in flight, ${SPANS_PER_EXPORT} spans per export in ${TRACES_PER_EXPORT} traces ` +
        `(${SPANS_PER_TRACE} spans each), input.value ${payloadBytes} B${gzip ? ', gzip' : ''}; ` +
        `${cpus().length} CPUs, load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} at the end\n`,
    );
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const c of cells) console.log(line(c));
    console.log('');
    for (const r of rows) {
      if (r.lost !== 0 || r.endToEndSeconds === null)
        console.log(
          `FAIL ${r.label}: ${int(r.load.acceptedSpans)} spans accepted, ${int(r.queryableSpans)} queryable` +
            (r.endToEndSeconds === null
              ? `; ${int(r.missingTraces)} trace(s) still missing after ${drainMs / 1000} s`
              : ''),
        );
      if (r.nats)
        console.log(
          `${r.label}: nats-server cut off ${r.nats.slowConsumers} slow consumer connection(s) (varz; the reason is in its log); redeliveries: ${
            r.nats.consumers
              .filter((c) => c.redeliveries > 0 || c.ackPending > 0)
              .map(
                (c) => `${c.name} ${c.redeliveries}${c.ackPending > 0 ? ` (${c.ackPending} unacked)` : ''}`,
              )
              .join(', ') || 'none'
          }`,
        );
      const letters = Object.entries(r.deadLetters);
      if (letters.length > 0)
        console.log(`FAIL ${r.label}: dead letters ${letters.map(([k, v]) => `${v}x ${k}`).join(', ')}`);
      if (r.logFile) {
        console.log(`${r.label}: the service's log is kept at ${r.logFile}; its warnings and errors:`);
        for (const [k, v] of r.problems.slice(0, 8)) console.log(`  ${v}x ${k}`);
      }
      const spans = r.load.acceptedSpans;
      console.log(
        `${r.label}: CPU per span by process: serving process (route: decode, normalize, publish) ${us(r.serveCpuSeconds, spans)} µs, ` +
          `data process (trace projector, chdb) ${us(r.dataCpuSeconds, spans)} µs, PostgreSQL ${us(r.postgresCpuSeconds, spans)} µs, ` +
          `other ${us(r.appCpuSeconds - r.serveCpuSeconds - r.dataCpuSeconds, spans)} µs; ` +
          `peak RSS serving ${int(r.serveHwmMb)} MB, data ${int(r.dataHwmMb)} MB`,
      );
      const threads = (t: [string, number][]) =>
        t
          .slice(0, 6)
          .map(([name, s]) => `${name} ${us(s, spans)}`)
          .join(', ');
      console.log(
        `${r.label}: by thread, µs/span: serving ${threads(r.serveThreads)}; data ${threads(r.dataThreads)}`,
      );
      const refused = Object.entries(r.load.refused);
      console.log(
        `${r.label}: export latency p50 ${int(r.load.latencyMs.p50)} ms, p99 ${int(r.load.latencyMs.p99)} ms; ` +
          `${refused.length ? `refused ${refused.map(([k, v]) => `${v}x ${k}`).join(', ')}; ` : ''}` +
          `${int(r.load.bytesSent / 1024 / 1024 / r.acceptedSeconds)} MB/s posted; bench process CPU ${us(r.benchCpuSeconds, r.load.acceptedSpans)} µs/span (apart: ${threads(r.benchThreads.slice(0, 3))}); ` +
          `${r.polls} query polls; ${r.processes} processes in the tree`,
      );
    }
    const summary = rows
      .map(
        (r) =>
          `${r.label} ${r.endToEndSeconds === null ? 'not reached' : `${int(r.load.acceptedSpans / r.endToEndSeconds)}/s`}`,
      )
      .join(', ');
    console.log(
      `\ntarget ${int(TARGET_SPANS_PER_SECOND)} spans/s end to end: ${rows.length > 0 && rows.every(met) ? 'MET' : 'NOT MET'} (${summary})`,
    );
    console.log(
      `\nend to end = spans accepted / (first post -> last accepted span queryable on GET /api/sessions/:id/traces); ` +
        `lag at end = last answer -> that moment; CPU = user + system of svc serve's whole process tree from /proc over the same window ` +
        `(app: node processes, PG: the embedded PostgreSQL), per accepted span (to the drain timeout when not all became queryable); the JetStream row's nats-server apart. ` +
        `Request ingest: ${int(requests)} request.completed envelopes published onto the same service's bus, until GET /api/requests counts them all.`,
    );
  }
};
