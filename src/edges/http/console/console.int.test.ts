import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../../lib/errors.js';
import { HealthRegistry } from '../../../lib/health.js';
import { authenticatedApiFamily } from '../api-family.js';
import { QUERY_ROUTE_SEGMENTS } from '../query/paths.js';
import { registerQueryRoutes } from '../query/routes.js';
import { createHttpServer } from '../server.js';
import { credentialOf, csrfTokenFor, SESSION_COOKIE } from '../session-credential.js';
import { queryRouteOf, registerApiProxy, rewriteQueryAlias } from './proxy.js';
import { loadConsoleApp, registerConsoleApp } from './static.js';

// SPEC 4.4-4.6 and 5: the console's session reaches the /api families as a cookie (CSRF-checked
// for changes) or as the bearer its proxy attaches; the query routes answer under /api/query/**.

const TOKEN = 'svc_sess_console_unit';
const silent = pino({ level: 'silent' });

/** An /api family like the real ones: it reads the credential the way they do and echoes it. */
const apiRole = {
  name: 'query',
  http: async (app: FastifyInstance) => {
    await app.register(async (scope) => {
      const family = authenticatedApiFamily(scope, {
        bodyLimit: 1_024,
        authenticate: (request) => {
          const token = credentialOf(request);
          if (token !== TOKEN) throw new ServiceError('unauthenticated', 'invalid or expired session token');
          return { token };
        },
      });
      scope.get('/api/requests', async (request) => ({
        caller: family.caller(request),
        authorization: request.headers.authorization ?? null,
        cookie: request.headers.cookie ?? null,
        query: request.query,
      }));
      scope.post('/api/things', async (request) => ({ body: request.body, caller: family.caller(request) }));
      scope.get('/api/sessions/:id/live', async (_request, reply) => {
        reply.hijack();
        reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
        reply.raw.write('data: one\n\n');
        setTimeout(() => reply.raw.end('data: two\n\n'), 50);
      });
    });
    app.get('/api/session/oidc/test/start', async (request, reply) =>
      reply.header('set-cookie', 'svc_oidc_state=s1; Path=/api/session/oidc/test/callback; HttpOnly').send({
        cookie: request.headers.cookie ?? null,
        authorization: request.headers.authorization ?? null,
      }),
    );
  },
};

let dir: string;
let local: FastifyInstance;
let upstream: FastifyInstance;
let remote: FastifyInstance;
let upstreamUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-console-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
  await writeFile(join(dir, 'assets', 'main-ABC.js'), 'console.log(1)');
  const built = await loadConsoleApp(dir);
  const base = { logger: silent, metrics: new Registry(), health: new HealthRegistry() };
  // One process: the console beside the API roles, the query routes through the alias.
  local = await createHttpServer({
    ...base,
    roles: [
      apiRole,
      { name: 'console', rewriteUrl: rewriteQueryAlias, http: (app) => registerConsoleApp(app, built) },
    ],
  });
  // Scaled out: an API process, and a console process that forwards to it.
  upstream = await createHttpServer({ ...base, metrics: new Registry(), roles: [apiRole] });
  upstreamUrl = await upstream.listen({ host: '127.0.0.1', port: 0 });
  remote = await createHttpServer({
    ...base,
    metrics: new Registry(),
    roles: [
      {
        name: 'console',
        http: (app) => {
          registerConsoleApp(app, built);
          registerApiProxy(app, { upstream: upstreamUrl, query: true });
        },
      },
    ],
  });
  await remote.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await Promise.all([local?.close(), upstream?.close(), remote?.close()]);
  await rm(dir, { recursive: true, force: true });
});

const cookie = `${SESSION_COOKIE}=${TOKEN}`;

describe('the session cookie on /api routes', () => {
  it('is accepted for reads, with no CSRF token needed', async () => {
    const res = await local.inject({ url: '/api/requests?org_id=o1', headers: { cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.json().caller).toEqual({ token: TOKEN });
  });

  it('needs the session CSRF token for a change, and refuses a wrong one', async () => {
    const post = (headers: Record<string, string>) =>
      local.inject({
        method: 'POST',
        url: '/api/things',
        headers: { cookie, ...headers },
        payload: { a: 1 },
      });
    const missing = await post({});
    expect(missing.statusCode).toBe(403);
    expect(missing.json()).toMatchObject({
      error: 'forbidden',
      message: expect.stringContaining('x-csrf-token'),
    });
    expect((await post({ 'x-csrf-token': csrfTokenFor('svc_sess_other') })).statusCode).toBe(403);
    const ok = await post({ 'x-csrf-token': csrfTokenFor(TOKEN) });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().body).toEqual({ a: 1 });
  });

  it('is refused from another site even for a read', async () => {
    for (const headers of [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
    ]) {
      const res = await local.inject({
        url: '/api/requests',
        headers: { cookie, host: 'console.example', ...headers },
      });
      expect(res.statusCode).toBe(403);
    }
    const same = await local.inject({
      url: '/api/requests',
      headers: { cookie, host: 'console.example', origin: 'https://console.example' },
    });
    expect(same.statusCode).toBe(200);
  });

  it('is not looked at when an Authorization header is present', async () => {
    const res = await local.inject({
      url: '/api/requests',
      headers: { cookie, authorization: 'Bearer wrong' },
    });
    expect(res.statusCode).toBe(401);
  });

  it('the CSRF token is a digest of the session: stable, distinct per session', () => {
    expect(csrfTokenFor(TOKEN)).toBe(csrfTokenFor(TOKEN));
    expect(csrfTokenFor(TOKEN)).not.toBe(csrfTokenFor(`${TOKEN}x`));
  });

  it('refuses two session cookies (one planted by a sibling subdomain), whichever comes first', async () => {
    for (const both of [
      `${cookie}; ${SESSION_COOKIE}=svc_sess_planted`,
      `${SESSION_COOKIE}=svc_sess_planted; ${cookie}`,
    ]) {
      const res = await local.inject({ url: '/api/requests', headers: { cookie: both } });
      expect(res.statusCode).toBe(401);
      expect(res.json().message).toContain('more than one console session cookie');
    }
  });
});

describe('/api/query/** (SPEC 4.5)', () => {
  it('names the query routes only', () => {
    expect(queryRouteOf('/api/query/requests?org_id=o')).toBe('/api/requests?org_id=o');
    expect(queryRouteOf('/api/query/traces/t1/tree')).toBe('/api/traces/t1/tree');
    expect(queryRouteOf('/api/query/workspaces')).toBeNull();
    expect(queryRouteOf('/api/query/../workspaces')).toBeNull();
    expect(queryRouteOf('/api/query/requests/../workspaces')).toBeNull();
    expect(queryRouteOf('/api/query/requests/%2e%2e/%2e%2e/workspaces')).toBeNull();
    expect(queryRouteOf('/api/query/requests%2F..%2Fworkspaces')).toBeNull();
    expect(queryRouteOf('/api/query//requests')).toBeNull();
    expect(queryRouteOf('/api/requests')).toBeNull();
  });

  it('in one process, reaches the query route with the cookie', async () => {
    const res = await local.inject({ url: '/api/query/requests?org_id=o1', headers: { cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ caller: { token: TOKEN }, query: { org_id: 'o1' } });
    const other = await local.inject({ url: '/api/query/workspaces', headers: { cookie } });
    expect(other.statusCode).toBe(404);
  });

  it('scaled out, forwards with the session as a bearer and no cookie', async () => {
    const res = await remote.inject({ url: '/api/query/requests?org_id=o1', headers: { cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      cookie: null,
      query: { org_id: 'o1' },
    });
    const unauth = await remote.inject({ url: '/api/query/requests?org_id=o1' });
    expect(unauth.statusCode).toBe(401);
    expect(unauth.json()).toMatchObject({ error: 'unauthenticated' });
  });

  it('scaled out, checks CSRF before anything leaves, and streams bodies both ways', async () => {
    const refused = await remote.inject({
      method: 'POST',
      url: '/api/things',
      headers: { cookie },
      payload: { a: 1 },
    });
    expect(refused.statusCode).toBe(403);
    const ok = await remote.inject({
      method: 'POST',
      url: '/api/things',
      headers: { cookie, 'x-csrf-token': csrfTokenFor(TOKEN) },
      payload: { a: 2 },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().body).toEqual({ a: 2 });
    const address = remote.server.address() as { port: number };
    const stream = await fetch(`http://127.0.0.1:${address.port}/api/query/sessions/s1/live`, {
      headers: { cookie },
    });
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(await stream.text()).toBe('data: one\n\ndata: two\n\n');
  });

  it('scaled out, passes sign-in cookies through both ways on /api/session/*', async () => {
    const res = await remote.inject({
      url: '/api/session/oidc/test/start',
      headers: { cookie: 'svc_oidc_state=s0' },
    });
    expect(res.json()).toEqual({ cookie: 'svc_oidc_state=s0', authorization: null });
    expect(res.headers['set-cookie']).toContain('svc_oidc_state=s1');
  });

  it('scaled out, nothing leaves /api or this upstream: dot segments, encoded ones, absolute targets', async () => {
    const address = remote.server.address() as { port: number };
    const raw = (target: string, extra = '') =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(address.port, '127.0.0.1', () =>
          socket.write(
            `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\ncookie: ${cookie}\r\n${extra}connection: close\r\n\r\n`,
          ),
        );
        let out = '';
        socket.on('data', (d) => {
          out += d.toString();
        });
        socket.on('end', () => resolve(out));
        socket.on('error', reject);
      });
    const upstreamPort = new URL(upstreamUrl).port;
    for (const target of [
      '/api/../metrics',
      '/api/query/requests/../../metrics',
      '/api/query/requests/../workspaces',
      '/api/%2e%2e/metrics',
      '/api/session/../requests',
      '/api//requests',
      `http://127.0.0.1:${upstreamPort}/api/requests`,
      `http://127.0.0.1:9/api/requests?org_id=o1`,
    ]) {
      const answer = await raw(target);
      expect(answer.split('\r\n')[0], target).toMatch(/^HTTP\/1\.1 (400|404)/);
      expect(answer, target).not.toContain('caller');
    }
    // The ordinary path still works over the same socket kind.
    expect((await raw('/api/query/requests?org_id=o1')).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('scaled out, an API that does not answer is a 502 in the envelope', async () => {
    const dead = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [
        {
          name: 'console',
          http: (app) => registerApiProxy(app, { upstream: 'http://127.0.0.1:9', query: true }),
        },
      ],
    });
    const res = await dead.inject({ url: '/api/query/requests', headers: { cookie } });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ error: 'upstream_error' });
    await dead.close();
  });
});

describe('the query route list', () => {
  it('names exactly the first segments of the routes the query role registers', async () => {
    const app = Fastify();
    const segments = new Set<string>();
    app.addHook('onRoute', (route) => {
      segments.add(route.url.split('/')[2]!);
    });
    // With the trace routes (their deps are only read when a request comes).
    await registerQueryRoutes(app, { traces: {} } as Parameters<typeof registerQueryRoutes>[1]);
    await app.ready();
    expect([...segments].sort()).toEqual([...QUERY_ROUTE_SEGMENTS].sort());
    await app.close();
  });
});

describe('the web app', () => {
  it('serves the page uncached with a strict CSP, and hashed assets for a year', async () => {
    for (const url of ['/console', '/console/requests/req_1']) {
      const page = await local.inject({ url });
      expect(page.statusCode).toBe(200);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(page.body).toContain('<div id="app">');
    }
    const asset = await local.inject({ url: '/console/assets/main-ABC.js' });
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    // Assets come from the built set by name only: no path reaches another file. A path that is
    // not an asset name is the page itself (the app's router answers it) or a 404.
    expect((await local.inject({ url: '/console/assets/index.html' })).statusCode).toBe(404);
    for (const url of ['/console/assets/../index.html', '/console/assets/%2e%2e%2f%2e%2e%2fpackage.json']) {
      const res = await local.inject({ url });
      expect([200, 404], url).toContain(res.statusCode);
      if (res.statusCode === 200) expect(res.body).toBe('<!doctype html><div id="app"></div>');
    }
    expect((await local.inject({ url: '/console/assets/nope.js' })).statusCode).toBe(404);
  });

  it('sends a browser at / to the console', async () => {
    const res = await local.inject({ url: '/' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/console/');
  });

  it('says clearly when the app is not built', async () => {
    const app = await createHttpServer({
      logger: silent,
      metrics: new Registry(),
      health: new HealthRegistry(),
      roles: [{ name: 'console', http: (a) => registerConsoleApp(a, null) }],
    });
    const res = await app.inject({ url: '/console' });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
    await app.close();
  });
});

describe('the proxy over real connections', () => {
  it('forwards a POST body (a request stream that ends before the answer)', async () => {
    const address = remote.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${address.port}/api/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfTokenFor(TOKEN) },
      body: JSON.stringify({ a: 3 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { body: unknown }).body).toEqual({ a: 3 });
  });
});
