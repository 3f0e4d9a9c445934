import autocannon from 'autocannon';

export interface LoadTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  /** Responses of any status: what the target served. */
  answered: number;
  /** Requests written; those still in flight when the run stopped were cut off, not answered. */
  sent: number;
  /** Non-2xx answers, transport errors and timeouts: any of them makes the run invalid. */
  failed: number;
  failures: string;
}

const percentile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

/**
 * A fixed-duration autocannon run. Latencies are taken from every 2xx response rather than from
 * autocannon's histogram, which keeps whole milliseconds: the targets are fractions of one.
 * autocannon times a response to its last byte, so a streamed reply counts in full.
 */
export const runLoad = async (
  target: LoadTarget,
  connections: number,
  seconds: number,
): Promise<LoadResult> => {
  const times: number[] = [];
  const instance = autocannon({
    url: target.url,
    method: 'POST',
    headers: target.headers,
    body: target.body,
    connections,
    duration: seconds,
    timeout: 10,
  });
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) times.push(ms);
  });
  const result = await instance;
  const sorted = Float64Array.from(times).sort();
  // autocannon counts a timeout in errors as well.
  const failed = result.non2xx + result.errors;
  const codes = Object.entries(result.statusCodeStats)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, s]) => `${s.count}x${code}`);
  if (result.errors) codes.push(`${result.errors} errors (${result.timeouts} timeouts)`);
  return {
    requestsPerSecond: sorted.length / result.duration,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    ok: sorted.length,
    answered: result['2xx'] + result.non2xx,
    sent: result.requests.sent,
    failed,
    failures: codes.join(', '),
  };
};
