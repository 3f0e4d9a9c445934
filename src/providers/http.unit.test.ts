import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUpstream, sseEvents } from './http.js';

// The attempt's time limit (SPEC 1.2 attempt budget, 7.3) must hold from the moment the
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

describe("callUpstream and the caller's signal", () => {
  it('listens for a client leaving while the body is read, and lets go once it is done', async () => {
    const pool = new Agent({ connections: 1 });
    try {
      const client = new AbortController();
      const served = await call('/fast', pool, client.signal, 1_000);
      expect(served.ok).toBe(true);
      expect(getEventListeners(client.signal, 'abort')).toHaveLength(1);
      if (served.ok) await served.response.body.json();
      await new Promise((resolve) => setImmediate(resolve));
      expect(getEventListeners(client.signal, 'abort')).toHaveLength(0);

      const timedOut = await call('/slow', pool, client.signal, 50);
      expect(timedOut.ok).toBe(false);
      expect(getEventListeners(client.signal, 'abort')).toHaveLength(0);
      releaseFirst();
    } finally {
      await pool.destroy();
    }
  });
});

describe('sseEvents', () => {
  /** A body that records how it was ended. */
  const body = (pieces: string[]) => {
    const seen = { dumped: false, destroyed: false };
    const b = {
      async *[Symbol.asyncIterator]() {
        for (const p of pieces) yield Buffer.from(p);
      },
      dump: async () => {
        seen.dumped = true;
      },
      destroy: () => {
        seen.destroyed = true;
      },
      on: () => b,
    };
    return { b, seen };
  };

  it('yields events split anywhere, ends at the end event and drains the rest instead of destroying', async () => {
    const { b, seen } = body(['data: {"a"', ':1}\n\ndata: [DO', 'NE]\n\ndata: {"late":1}\n\n']);
    const out: string[] = [];
    for await (const e of sseEvents(b, 1_000, (e) => e.data === '[DONE]')) {
      out.push(e.data);
      if (e.data === '[DONE]') break;
    }
    expect(out).toEqual(['{"a":1}', '[DONE]']);
    expect(seen).toEqual({ dumped: true, destroyed: false });
  });

  it('a consumer leaving before the end destroys the body', async () => {
    const { b, seen } = body(['data: 1\n\ndata: 2\n\ndata: [DONE]\n\n']);
    for await (const e of sseEvents(b, 1_000, (e) => e.data === '[DONE]')) if (e.data === '1') break;
    expect(seen).toEqual({ dumped: false, destroyed: true });
  });

  it('the size cap and a read failure are StreamFailures', async () => {
    const { b } = body(['data: 0123456789\n\n']);
    await expect(async () => {
      for await (const _ of sseEvents(b, 5));
    }).rejects.toMatchObject({ name: 'StreamFailure', kind: 'size_cap' });
    const broken = {
      async *[Symbol.asyncIterator]() {
        yield Buffer.from('data: 1\n\n');
        throw new Error('socket hang up at https://upstream.example/v1');
      },
    };
    await expect(async () => {
      for await (const _ of sseEvents(broken, 1_000));
    }).rejects.toMatchObject({ kind: 'read', message: 'upstream stream read failed' });
  });
});
