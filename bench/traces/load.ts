import { gzipSync } from 'node:zlib';
import { Pool } from 'undici';
import { type ExportFactory, SPANS_PER_EXPORT, TRACES_PER_EXPORT } from './exports.js';

/**
 * The exporters: `concurrency` loops, each posting one export at a time to POST /v1/traces (as a
 * BatchSpanProcessor with one export in flight does), on keep-alive connections, until `seconds`
 * have passed since the first post; what is in flight then is awaited and counted. Export i goes
 * to session floor(i / exportsPerSession) (or all to the warm-up session). An answer is accepted
 * when it is 200; its spans count as accepted less the partial_success's rejected_spans.
 */

export interface LoadResult {
  exports: number;
  acceptedExports: number;
  acceptedSpans: number;
  rejectedSpans: number;
  /** Non-200 answers by status ('error' for a request that failed without one). */
  refused: Map<string, number>;
  /** performance.now() at the first post and when the last answer came. */
  startedAt: number;
  endedAt: number;
  /** Accepted traces by session id: what the query API must show. */
  tracesBySession: Map<string, number>;
  bytesSent: number;
  /** Per-export latency (ms), sorted. */
  latencies: number[];
}

/** partial_success.rejected_spans of an ExportTraceServiceResponse (0 when absent or empty). */
const rejectedSpansOf = (body: Buffer): number => {
  // field 1 (partial_success, LEN) { field 1 rejected_spans varint; field 2 error_message }
  const varint = (at: number): [number, number] => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const b = body[at++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return [v, at];
      shift += 7;
    }
  };
  let at = 0;
  while (at < body.length) {
    const [tag, next] = varint(at);
    at = next;
    if (tag >>> 3 === 1 && (tag & 7) === 2) {
      const [len, start] = varint(at);
      let p = start;
      while (p < start + len) {
        const [t, n] = varint(p);
        p = n;
        if ((t & 7) === 0) {
          const [v, m] = varint(p);
          if (t >>> 3 === 1) return v;
          p = m;
        } else if ((t & 7) === 2) {
          const [l, m] = varint(p);
          p = m + l;
        } else return 0;
      }
      return 0;
    }
    return 0;
  }
  return 0;
};

export const runLoad = async (options: {
  url: string;
  traceKey: string;
  factory: ExportFactory;
  concurrency: number;
  seconds: number;
  /** Export indices start here (so warm-up and measured exports never share ids). */
  firstIndex: number;
  exportsPerSession: number | 'warmup';
  sessionIdOf: (session: number | 'warmup') => string;
  gzip: boolean;
  onProgress?: (r: LoadResult) => void;
  /** A session whose exports have all been answered, with the traces accepted in it (oldest first). */
  onSessionClosed?: (sessionId: string, traces: number) => void;
}): Promise<LoadResult> => {
  const origin = new URL(options.url).origin;
  const pool = new Pool(origin, { connections: options.concurrency, pipelining: 1 });
  const result: LoadResult = {
    exports: 0,
    acceptedExports: 0,
    acceptedSpans: 0,
    rejectedSpans: 0,
    refused: new Map(),
    startedAt: performance.now(),
    endedAt: 0,
    tracesBySession: new Map(),
    bytesSent: 0,
    latencies: [],
  };
  const stopAt = result.startedAt + options.seconds * 1_000;
  let next = options.firstIndex;
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.traceKey}`,
    'content-type': 'application/x-protobuf',
    ...(options.gzip ? { 'content-encoding': 'gzip' } : {}),
  };
  // Sessions by number: exports sent and answered, traces accepted. The lowest still open closes
  // once the exporters have moved past its exports and every one of them was answered.
  const sessions = new Map<number | 'warmup', { sent: number; answered: number; traces: number }>();
  let lowestOpen = 0;
  const close = (key: number | 'warmup') => {
    const s = sessions.get(key);
    sessions.delete(key);
    if (s && s.traces > 0) options.onSessionClosed?.(options.sessionIdOf(key), s.traces);
  };
  const closeFinished = () => {
    if (options.exportsPerSession === 'warmup') return;
    for (;;) {
      const s = sessions.get(lowestOpen);
      const pastIt = next - options.firstIndex >= (lowestOpen + 1) * options.exportsPerSession;
      if (!s || !pastIt || s.answered < s.sent) return;
      close(lowestOpen++);
    }
  };
  const progress = options.onProgress ? setInterval(() => options.onProgress!(result), 1_000) : null;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const index = next++;
      const session =
        options.exportsPerSession === 'warmup'
          ? 'warmup'
          : Math.floor((index - options.firstIndex) / options.exportsPerSession);
      const open = sessions.get(session) ?? { sent: 0, answered: 0, traces: 0 };
      open.sent++;
      sessions.set(session, open);
      const raw = options.factory.make(index, session);
      const body = options.gzip ? gzipSync(raw, { level: 1 }) : raw;
      result.exports++;
      result.bytesSent += body.length;
      const sent = performance.now();
      try {
        const res = await pool.request({ origin, path: '/v1/traces', method: 'POST', headers, body });
        const answer = Buffer.from(await res.body.arrayBuffer());
        result.latencies.push(performance.now() - sent);
        if (res.statusCode !== 200) {
          const key = String(res.statusCode);
          result.refused.set(key, (result.refused.get(key) ?? 0) + 1);
        } else {
          const rejected = rejectedSpansOf(answer);
          result.acceptedExports++;
          result.acceptedSpans += SPANS_PER_EXPORT - rejected;
          result.rejectedSpans += rejected;
          // A trace of the export counts when any of its spans was accepted; rejections here are none.
          open.traces += TRACES_PER_EXPORT;
          const sid = options.sessionIdOf(session);
          result.tracesBySession.set(sid, (result.tracesBySession.get(sid) ?? 0) + TRACES_PER_EXPORT);
        }
      } catch {
        result.refused.set('error', (result.refused.get('error') ?? 0) + 1);
      }
      open.answered++;
      closeFinished();
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    if (progress) clearInterval(progress);
    result.endedAt = performance.now();
    await pool.close();
  }
  for (const key of [...sessions.keys()].sort((a, b) => (a === 'warmup' ? -1 : b === 'warmup' ? 1 : a - b)))
    close(key);
  result.latencies.sort((a, b) => a - b);
  return result;
};
