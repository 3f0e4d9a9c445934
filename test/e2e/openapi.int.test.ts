import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/cli/service.js';
import { openApiPath } from '../../src/edges/http/openapi.js';
import type { ServedRoute } from '../../src/edges/http/server.js';
import { startEveryRole } from '../helpers/every-role.js';

// The OpenAPI 3.1 document at /openapi.json (issue: conventions, item 1), held to the process that
// serves it, with every role in one process: an independent OpenAPI 3.1 validator accepts it; every
// route a role registers is in it; every operation it lists answers as a route (not the "no such
// route" 404 of its surface); the /v1 and /alt operations point at the dialects' own specifications.

interface Operation {
  operationId: string;
  tags: string[];
  parameters: { name: string; in: string }[];
  requestBody?: { content: { 'application/json': { schema: Record<string, unknown> } } };
  externalDocs?: { url: string };
  security?: unknown[];
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

let stop: (() => Promise<void>) | null = null;
let service: RunningService;
let routes: ServedRoute[] = [];
let doc: Doc;

beforeAll(async () => {
  ({ service, stop } = await startEveryRole('openapi'));
  routes = service.routes.filter((r) => r.method !== 'HEAD');
  const res = await fetch(`${service.httpUrl}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = (await res.json()) as Doc;
}, 120_000);

afterAll(async () => {
  await stop?.();
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );

/** What a surface answers for a path it has no route for. */
const UNROUTED = /no route for|unknown route|is not supported by this gateway/;

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document an independent validator accepts', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every route a role registers, under that role', () => {
    expect(routes.length).toBeGreaterThan(150);
    const missing = routes.flatMap((r) => {
      const op = doc.paths[openApiPath(r.url).path]?.[r.method.toLowerCase()];
      return op?.tags.includes(r.role) ? [] : [`${r.method} ${r.url} (${r.role})`];
    });
    expect(missing).toEqual([]);
    for (const own of ['/healthz', '/livez', '/readyz', '/metrics', '/openapi.json'])
      expect(doc.paths[own]?.get?.security, own).toEqual([]);
  });

  it('lists nothing that is not served: each operation answers as a route', async () => {
    const unrouted: string[] = [];
    for (const { path, method } of operations()) {
      const url = path.replace(/\{[^}]+\}/g, 'x1');
      const res = await fetch(`${service.httpUrl}${url}`, {
        method,
        redirect: 'manual',
        ...(method === 'GET' || method === 'DELETE'
          ? {}
          : { body: '{}', headers: { 'content-type': 'application/json' } }),
      });
      const text = await res.text();
      if (res.status === 404 && UNROUTED.test(text))
        unrouted.push(`${method} ${path}: ${text.slice(0, 120)}`);
    }
    expect(unrouted).toEqual([]);
    // And the check can fail: a path no role serves is told apart.
    const none = await fetch(`${service.httpUrl}/api/no-such-route-x1`);
    expect(none.status).toBe(404);
    expect(UNROUTED.test(await none.text())).toBe(true);
  }, 120_000);

  it('declares each path parameter, and the body schema a route parses with', () => {
    for (const { path, method, op } of operations()) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(
        op.parameters.filter((p) => p.in === 'path').map((p) => p.name),
        `${method} ${path}`,
      ).toEqual(names);
    }
    const create = doc.paths['/api/workspaces']?.post;
    expect(create?.requestBody?.content['application/json'].schema).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    });
  });

  it('points the /v1 and /alt operations at the OpenAI and Anthropic specifications instead of restating them', () => {
    const chat = doc.paths['/v1/chat/completions']?.post;
    expect(chat?.externalDocs?.url).toMatch(/openai/);
    expect(chat?.requestBody).toBeUndefined();
    expect(doc.paths['/alt/v1/messages']?.post?.externalDocs?.url).toMatch(/anthropic/);
    // The service's own routes under /v1 are its own.
    expect(doc.paths['/v1/traces']?.post?.externalDocs).toBeUndefined();
  });
});
