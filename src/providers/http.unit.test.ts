import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUpstream } from './http.js';

// The attempt's time limit (issue 6 item 5; SPEC 4.1 budget, 7.3) must hold from the moment the
// call is made, including the time it waits for a pooled connection: undici's own headersTimeout
// only starts on a connected socket.

let server: Server;
let url: string;
let releaseFirst: () => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/slow') {
      releaseFirst = () => res.end('{"late":true}');
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const call = (path: string, dispatcher: Agent, signal: AbortSignal, timeoutMs: number) =>
  callUpstream({
    url: `${url}${path}`,
    headers: { 'content-type': 'application/json' },
    body: '{}',
    signal,
    timeoutMs,
    bodyTimeoutMs: timeoutMs,
    dispatcher,
  });

describe('callUpstream time limit', () => {
  it('times out a call still queued behind a busy connection, before that connection frees up', async () => {
    const pool = new Agent({ connections: 1, pipelining: 1 });
    try {
      const order: string[] = [];
      const first = call('/slow', pool, new AbortController().signal, 60_000).then((r) => {
        order.push('first');
        return r;
      });
      // Let the first call take the only connection.
      await new Promise((r) => setTimeout(r, 100));
      const queued = await call('/fast', pool, new AbortController().signal, 200);
      order.push('queued');
      expect(queued).toMatchObject({ ok: false, failure: { kind: 'Timeout', retryable: true } });
      // The queued call gave up while the first still held the connection.
      expect(order).toEqual(['queued']);
      releaseFirst();
      const done = await first;
      expect(done.ok).toBe(true);
      if (done.ok) await done.response.body.text();
    } finally {
      await pool.close();
    }
  });

  it('a client that leaves cancels the call and is not reported as a timeout', async () => {
    const pool = new Agent({ connections: 1 });
    try {
      const client = new AbortController();
      const pending = call('/slow', pool, client.signal, 60_000);
      await new Promise((r) => setTimeout(r, 50));
      client.abort();
      expect(await pending).toMatchObject({
        ok: false,
        failure: { kind: 'UpstreamError', message: 'request cancelled by the client', retryable: false },
      });
    } finally {
      await pool.destroy();
    }
  });

  it('an answer that starts in time keeps its body readable after the limit passes', async () => {
    const pool = new Agent({ connections: 1 });
    try {
      const r = await call('/fast', pool, new AbortController().signal, 50);
      expect(r.ok).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (r.ok) expect(await r.response.body.json()).toEqual({ ok: true });
    } finally {
      await pool.close();
    }
  });
});
