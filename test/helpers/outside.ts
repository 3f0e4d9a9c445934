import { connect as netConnect } from 'node:net';
import type { GatewayEnv } from './gateway-env.js';

/**
 * Driving a running `svc serve` from outside, for the security tests: plain HTTP with a
 * bearer, request rows through the query API, wallet state through the wallet route. Nothing here
 * imports `src/`, so the tests survive a restructuring of the service's folders.
 */

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, or null when the body is empty or not JSON. */
  json: Record<string, unknown> | null;
}

const parse = (text: string): Record<string, unknown> | null => {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

/** One HTTP call; a string body goes out verbatim, anything else as JSON. */
export const call = async (
  baseUrl: string,
  method: string,
  path: string,
  options: {
    token?: string | null;
    body?: unknown;
    headers?: Record<string, string>;
    apiKeyHeader?: boolean;
  } = {},
): Promise<HttpAnswer> => {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) {
    if (options.apiKeyHeader) headers['x-api-key'] = options.token;
    else headers.authorization = `Bearer ${options.token}`;
  }
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parse(text) };
};

/** The request row the query API returns for one request id of an org, or null while absent. */
export const requestRow = async (
  gw: Pick<GatewayEnv, 'admin'> & { serve: { httpUrl: string } },
  orgId: string,
  requestId: string,
): Promise<Record<string, unknown> | null> => {
  const r = await call(gw.serve.httpUrl, 'GET', `/api/requests/${requestId}?org_id=${orgId}`, {
    token: gw.admin,
  });
  if (r.status === 404) return null;
  if (r.status !== 200)
    throw new Error(`GET /api/requests/${requestId}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
};

/** Waits until every id has a row (or the time is up) and returns the ids still missing. */
export const missingRows = async (
  gw: Pick<GatewayEnv, 'admin'> & { serve: { httpUrl: string } },
  orgId: string,
  requestIds: readonly string[],
  timeoutMs: number,
): Promise<string[]> => {
  const deadline = Date.now() + timeoutMs;
  let missing = [...requestIds];
  for (;;) {
    const still: string[] = [];
    for (const id of missing) if (!(await requestRow(gw, orgId, id).catch(() => null))) still.push(id);
    missing = still;
    if (missing.length === 0 || Date.now() > deadline) return missing;
    await new Promise((r) => setTimeout(r, 250));
  }
};

export interface Wallet {
  balance_usd: string;
  held_usd: string;
  available_usd: string;
}

export const walletOf = async (gw: GatewayEnv, workspaceId: string): Promise<Wallet> => {
  const r = await call(gw.serve.httpUrl, 'GET', `/api/workspaces/${workspaceId}/wallet`, { token: gw.admin });
  if (r.status !== 200) throw new Error(`wallet of ${workspaceId}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json as unknown as Wallet;
};

/** A gauge or counter value from /metrics (sum of every series whose line matches), NaN when absent. */
export const metricSum = async (baseUrl: string, line: RegExp): Promise<number> => {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const values = text
    .split('\n')
    .filter((l) => !l.startsWith('#') && line.test(l))
    .map((l) => Number(l.split(' ').at(-1)));
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0);
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Sends the head of a request and the first `firstChunk` bytes of a body announced as `length`
 * bytes, then waits up to `waitMs` for the server to answer while the rest is still unsent.
 * Resolves with the status line's code (or null when nothing came back in time) and how many body
 * bytes the client had written when the answer came.
 */
export const answerBeforeBody = (
  baseUrl: string,
  head: { method: string; path: string; headers: Record<string, string> },
  length: number,
  firstChunk: number,
  waitMs: number,
): Promise<{ status: number | null; sentBytes: number }> =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl);
    const socket = netConnect(Number(url.port), url.hostname);
    let received = '';
    let sent = 0;
    let settled = false;
    const done = (status: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, sentBytes: sent });
    };
    const timer = setTimeout(() => done(null), waitMs);
    socket.on('error', (err) => {
      if (settled) return;
      // A server that answered and closed may reset the socket while bytes are still unsent.
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      if (m) return done(Number(m[1]));
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      if (m) done(Number(m[1]));
    });
    socket.on('connect', () => {
      const lines = [
        `${head.method} ${head.path} HTTP/1.1`,
        `host: ${url.host}`,
        `content-length: ${length}`,
        ...Object.entries(head.headers).map(([k, v]) => `${k}: ${v}`),
        '',
        '',
      ];
      socket.write(lines.join('\r\n'));
      // A JSON-looking opening so a parser that starts early sees a plausible body.
      const chunk = Buffer.alloc(firstChunk, 0x20);
      chunk.write('{"x":"');
      socket.write(chunk);
      sent = firstChunk;
    });
  });

/** RFC 4180 CSV into rows of cells (quotes unescaped), enough for the service's exports. */
export const parseCsv = (text: string): string[][] => {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"' && cell === '') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n' || (ch === '\r' && text[i + 1] === '\n')) {
      if (ch === '\r') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += ch;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
};
