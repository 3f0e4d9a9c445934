import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HealthRegistry } from '../../lib/health.js';
import type { Role } from '../../roles/role.js';
import { createHttpServer } from './server.js';

// /healthz reports each dependency (503 when one is down); graceful shutdown
// stops accepting and drains in-flight requests.

const silent = pino({ level: 'silent' });

describe('http server', () => {
  it('answers a path with malformed percent-encoding in the envelope of its surface (SPEC 7.1, 7.2, 7.6)', async () => {
    const app = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [{ name: 'gateway', http: (a) => void a.post('/v1/chat/completions', async () => ({})) }],
    });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const primary = await fetch(`${base}/v1/chat/completions%ED%A0%80`, { method: 'POST' });
      expect(primary.status).toBe(400);
      expect(primary.headers.get('x-svc-request-id')).toMatch(/^req_/);
      expect(await primary.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.stringContaining('percent-encoding') },
      });
      const alt = await fetch(`${base}/alt/v1/messages%ED%A0%80`, { method: 'POST' });
      expect(await alt.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      const api = await fetch(`${base}/api/requests%ED%A0%80`);
      expect(await api.json()).toMatchObject({ error: 'bad_request' });
    } finally {
      await app.close();
    }
  });

  it('answers a request Node cannot parse (a raw non-ASCII byte in the query, a bad header line) in the envelope of its surface', async () => {
    const app = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [{ name: 'gateway', http: (a) => void a.get('/v1/models', async () => ({})) }],
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const raw = (request: string) =>
      new Promise<{ status: number; headers: string; body: unknown }>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(Buffer.from(request, 'latin1')));
        const chunks: Buffer[] = [];
        socket.on('data', (c) => chunks.push(c));
        socket.on('error', reject);
        socket.on('close', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const [head = '', body = ''] = text.split('\r\n\r\n');
          resolve({
            status: Number(head.split(' ')[1]),
            headers: head.toLowerCase(),
            body: JSON.parse(body),
          });
        });
      });
    try {
      const primary = await raw('GET /v1/models?q=caf\xe9 HTTP/1.1\r\nhost: a\r\n\r\n');
      expect(primary.status).toBe(400);
      expect(primary.headers).toMatch(/x-svc-request-id: req_/);
      expect(primary.body).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.stringContaining('percent-encode') },
      });
      const alt = await raw('GET /alt/v1/messages HTTP/1.1\r\nho st: a\r\n\r\n');
      expect(alt.status).toBe(400);
      expect(alt.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      const api = await raw('GET /api/requests?x=\x01 HTTP/1.1\r\nhost: a\r\n\r\n');
      expect(api.body).toMatchObject({ error: 'bad_request' });
      const large = await raw(`GET /v1/models HTTP/1.1\r\nhost: a\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(large.status).toBe(431);
      expect(large.body).toMatchObject({ error: { code: 'request_header_fields_too_large' } });
      // On a keep-alive connection that has already been answered, the refused request is answered too.
      const reused = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.write('GET /v1/models HTTP/1.1\r\nhost: a\r\n\r\n'),
        );
        let text = '';
        socket.on('data', (c) => {
          const first = text === '';
          text += c.toString('latin1');
          if (first)
            socket.write(Buffer.from('GET /v1/models?q=caf\xe9 HTTP/1.1\r\nhost: a\r\n\r\n', 'latin1'));
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(text));
      });
      expect(reused).toMatch(
        /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 400 Bad Request[\s\S]*"invalid_request_error"/,
      );
      // The server serves on.
      expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('answers /healthz 503 naming the dependency that is down', async () => {
    const health = new HealthRegistry();
    health.register('postgres', async () => {});
    health.register('bus', async () => {
      throw new Error('connection refused');
    });
    const app = await createHttpServer({ logger: silent, metrics: new Registry(), health, roles: [] });
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({
      status: 'degraded',
      dependencies: { postgres: { status: 'up' }, bus: { status: 'down', detail: 'connection refused' } },
    });
    await app.close();
  });

  it('answers /livez and /readyz 200 while a dependency is down: /healthz alone reports it (issue 28)', async () => {
    const health = new HealthRegistry();
    health.register('postgres', async () => {});
    health.register('bus', async () => {
      throw new Error('connection refused');
    });
    const app = await createHttpServer({ logger: silent, metrics: new Registry(), health, roles: [] });
    const live = await app.inject({ method: 'GET', url: '/livez' });
    expect([live.statusCode, live.json()]).toEqual([200, { status: 'alive' }]);
    // A gateway serves through a bus outage (its spool): the pod stays in its Service.
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ready' }]);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(503);
    await app.close();
  });

  it('a dependency that hangs is reported down within the bound', async () => {
    const health = new HealthRegistry();
    health.register('slow', () => new Promise(() => {}));
    const report = await health.report(100);
    expect(report.ok).toBe(false);
    expect(report.dependencies.slow?.detail).toContain('no answer within 100 ms');
  });

  it('drains an in-flight request on close and refuses new connections', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered: () => void = () => {};
    const inHandler = new Promise<void>((r) => {
      entered = r;
    });
    const slowRole: Role = {
      name: 'gateway',
      http: (app) => {
        app.get('/slow', async () => {
          entered();
          await gate;
          return { done: true };
        });
      },
    };
    const app = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [slowRole],
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const inFlight = fetch(`http://127.0.0.1:${port}/slow`);
    // The request is in flight once its handler runs; only then does the close begin.
    await inHandler;
    const closing = app.close();
    await new Promise((r) => setTimeout(r, 50));
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ done: true });
    await closing;
  });

  it('unknown routes are 404 with a message', async () => {
    const app = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [],
    });
    const res = await app.inject({ method: 'GET', url: '/nowhere?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'not_found', message: 'no route for GET /nowhere' });
    await app.close();
  });
});

describe('requests without a body', () => {
  const echoRole: Role = {
    name: 'gateway',
    http: (app) => {
      app.delete('/things/:id', async (request) => ({ deleted: (request.params as { id: string }).id }));
      app.post('/echo', async (request) => ({ body: request.body ?? null }));
    },
  };
  const open = () =>
    createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [echoRole],
    });

  it('DELETE and POST with content-type application/json and no body reach the route', async () => {
    const app = await open();
    const json = { 'content-type': 'application/json' };
    const del = await app.inject({ method: 'DELETE', url: '/things/7', headers: json });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ deleted: '7' });
    const post = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { ...json, 'content-length': '0' },
    });
    expect(post.statusCode).toBe(200);
    expect(post.json()).toEqual({ body: null });
    await app.close();
  });

  it('an empty chunked body is no body; a JSON body still parses, and a poisoned one is still refused', async () => {
    const app = await open();
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const { request } = await import('node:http');
    const chunkedEmpty = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/echo',
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => {
            body += d.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(); // no Content-Length: Node sends Transfer-Encoding: chunked with no chunk
    });
    expect(chunkedEmpty).toEqual({ status: 200, body: '{"body":null}' });
    const parsed = await app.inject({ method: 'POST', url: '/echo', payload: { a: 1 } });
    expect(parsed.json()).toEqual({ body: { a: 1 } });
    const poisoned = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"__proto__":{"polluted":true}}',
    });
    expect(poisoned.statusCode).toBe(400);
    const broken = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expect(broken.statusCode).toBe(400);
    await app.close();
  });
});
