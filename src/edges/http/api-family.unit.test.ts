import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AnalyticsError } from '../../analytics/port.js';
import { UnstorableEventError, VersionConflictError } from '../../events/event-store.js';
import { ServiceError } from '../../lib/errors.js';
import { HealthRegistry } from '../../lib/health.js';
import { authenticatedApiFamily, publicApiFamily } from './api-family.js';
import { parseBody } from './body.js';
import { createHttpServer } from './server.js';

// SPEC 5, 7.6: an /api family authenticates in onRequest (before the body is read), limits bodies,
// refuses parameters PostgreSQL cannot store, and answers every failure in the /api envelope.

const LIMIT = 1_024;
let app: FastifyInstance;
let bodiesRead = 0;

beforeAll(async () => {
  app = await createHttpServer({
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    health: new HealthRegistry(),
    roles: [
      {
        name: 'control-plane',
        http: async (role) => {
          await role.register(async (scope) => {
            const family = authenticatedApiFamily(scope, {
              bodyLimit: LIMIT,
              authenticate: async (request) => {
                if (request.headers.authorization !== 'Bearer good')
                  throw new ServiceError('unauthenticated', 'invalid or expired session token');
                return { who: 'ada' };
              },
            });
            scope.addHook('preValidation', async () => {
              bodiesRead++;
            });
            scope.post('/api/things/:thing_id', async (request) => ({
              caller: family.caller(request),
              body: parseBody(
                z.strictObject({ name: z.string(), meta: z.unknown().optional() }),
                request.body,
              ),
            }));
            scope.post('/api/conflict', async () => {
              throw new VersionConflictError('project-1', 3, 4);
            });
            scope.post('/api/analytics-away', async () => {
              throw new AnalyticsError('unavailable', 'the analytics process is not running');
            });
            scope.post('/api/analytics-broken', async () => {
              throw new AnalyticsError('server', 'Code: 62. DB::Exception: Syntax error');
            });
            scope.post('/api/unstorable', async () => {
              throw new UnstorableEventError(
                'project-1',
                'ProjectCreated',
                'data.name',
                'must not contain NUL',
              );
            });
          });
          await role.register(async (scope) => {
            publicApiFamily(scope, { bodyLimit: LIMIT });
            scope.post('/api/public', async (request) => ({ body: request.body }));
          });
        },
      },
    ],
  });
}, 30_000);
afterAll(async () => {
  await app?.close();
});

const post = (url: string, payload: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    payload,
    headers: { 'content-type': 'application/json', ...headers },
  });
const good = { authorization: 'Bearer good' };

describe('an authenticated /api family', () => {
  it('answers 401 before the body: no bearer, a wrong bearer, a malformed or oversized body', async () => {
    const before = bodiesRead;
    for (const [body, headers] of [
      ['{"', {}],
      ['{"name":7}', {}],
      ['{}', { authorization: 'Bearer bad' }],
      ['x'.repeat(LIMIT * 4), { authorization: 'Bearer bad' }],
    ] as const) {
      const r = await post('/api/things/t1', body, headers);
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 401,
        body: { error: 'unauthenticated', message: expect.any(String) },
      });
    }
    expect(bodiesRead).toBe(before);
  });

  it('hands the handler the authenticated caller', async () => {
    const r = await post('/api/things/t1', '{"name":"n"}', good);
    expect(r.json()).toEqual({ caller: { who: 'ada' }, body: { name: 'n' } });
  });

  it('answers a body over the family limit 413 in the envelope, naming the limit', async () => {
    const r = await post('/api/things/t1', JSON.stringify({ name: 'x'.repeat(LIMIT) }), good);
    expect(r.statusCode).toBe(413);
    expect(r.json()).toEqual({
      error: 'payload_too_large',
      message: expect.stringContaining(`${LIMIT} bytes`),
    });
  });

  it("answers fastify's own client errors in the envelope: bad JSON 400, another media type 415", async () => {
    const bad = await post('/api/things/t1', '{"name":', good);
    expect({ status: bad.statusCode, error: bad.json().error }).toEqual({
      status: 400,
      error: 'bad_request',
    });
    const media = await post('/api/things/t1', '<name/>', { ...good, 'content-type': 'application/xml' });
    expect({ status: media.statusCode, error: media.json().error }).toEqual({
      status: 415,
      error: 'unsupported_media_type',
    });
  });

  it('refuses text PostgreSQL cannot store with 400 naming the field: NUL, an unpaired surrogate, deep nesting', async () => {
    const cases: [string, string][] = [
      ['{"name":"a\\u0000b"}', 'name'],
      ['{"name":"a\\udfffb"}', 'name'],
      ['{"name":"n","meta":{"ok":["\\ud800"]}}', 'meta.ok.0'],
      ['{"name":"n","meta":{"k\\u0000":1}}', 'meta.k\u0000'],
      [`{"name":"n","meta":${'['.repeat(200)}${']'.repeat(200)}}`, `meta${'.0'.repeat(63)}`],
    ];
    for (const [body, param] of cases) {
      const r = await post('/api/things/t1', body, good);
      expect({ status: r.statusCode, error: r.json().error, param: r.json().param }, body).toEqual({
        status: 400,
        error: 'bad_request',
        param,
      });
    }
    expect((await post('/api/things/t1', '{"name":"😀 \\ud83d\\ude00"}', good)).statusCode).toBe(200);
  });

  it('refuses a NUL in a path or query parameter with 400 naming it, after authentication', async () => {
    const path = await post('/api/things/a%00b', '{"name":"n"}', good);
    expect({ status: path.statusCode, param: path.json().param }).toEqual({ status: 400, param: 'thing_id' });
    const query = await post('/api/things/t1?org_id=%00', '{"name":"n"}', good);
    expect({ status: query.statusCode, param: query.json().param }).toEqual({ status: 400, param: 'org_id' });
    expect((await post('/api/things/a%00b', '{}')).statusCode).toBe(401);
  });

  it('answers a version conflict that outlived its retries 409, an unstorable event 400', async () => {
    const conflict = await post('/api/conflict', '{}', good);
    expect({ status: conflict.statusCode, error: conflict.json().error }).toEqual({
      status: 409,
      error: 'conflict',
    });
    const unstorable = await post('/api/unstorable', '{}', good);
    expect({ status: unstorable.statusCode, error: unstorable.json().error }).toEqual({
      status: 400,
      error: 'bad_request',
    });
  });

  it('analytics away for a while is a 503 with Retry-After, naming no engine detail; a broken query stays a 500', async () => {
    const away = await post('/api/analytics-away', '{}', good);
    expect(away.statusCode).toBe(503);
    expect(away.headers['retry-after']).toBe('2');
    expect(away.json().error).toBe('service_unavailable');
    expect(away.body).not.toContain('process');
    const broken = await post('/api/analytics-broken', '{}', good);
    expect(broken.statusCode).toBe(500);
    expect(broken.body).not.toContain('DB::Exception');
  });
});

describe('a public /api family', () => {
  it('needs no credential and still limits the body', async () => {
    expect((await post('/api/public', '{"a":1}')).json()).toEqual({ body: { a: 1 } });
    const big = await post('/api/public', JSON.stringify({ a: 'x'.repeat(LIMIT) }));
    expect({ status: big.statusCode, error: big.json().error }).toEqual({
      status: 413,
      error: 'payload_too_large',
    });
  });
});
