import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../../src/analytics/chdb/store.js';
import { migrateClickHouse } from '../../src/analytics/migrate.js';
import { addQueryService } from '../../src/edges/grpc/query.js';
import { grpcMonthlySpend } from '../../src/edges/grpc/query-client.js';
import { bindGrpc } from '../../src/edges/grpc/server.js';
import { registerQueryRoutes } from '../../src/edges/http/query/routes.js';
import { blake3Hex } from '../../src/events/envelopes/body.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { hashSecret } from '../../src/lib/crypto.js';
import { renderApiError, ServiceError } from '../../src/lib/errors.js';
import { addUsd, formatUsd, parseUsd, ZERO_USD } from '../../src/lib/money.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { developerTokenVerifier } from '../../src/projections/auth/reads.js';
import { LiveSessions } from '../../src/query/live.js';
import { type ControlPlane, makeControlPlane } from '../../src/roles/control-plane.js';
import {
  type GeneratedRequest,
  generateRequest,
  insertGenerated,
  prng,
  type Tenant,
} from '../fixtures/query/query.fixtures.js';
import { grpcClient } from '../helpers/grpc.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

// SPEC 4.5: finance reconciliation over a generated month with dimensions, tenant
// isolation on every route, verified body fetch refusing a tampered pack, export limits, and the
// credential rules (developer token yes, service API key no). One chdb engine for the file.

const ADMIN = 'admin-token-for-query-tests';
let db: TestDatabase;
let cp: ControlPlane;
let chdb: ChdbAnalyticsStore;
let dir: string;
let app: FastifyInstance;
let objects: FsObjectStore;
const t: Record<string, Tenant> = {};
const tok: Record<string, string> = {};
const month: GeneratedRequest[] = [];
let wsA = '';
let wsB = '';
let gatewayKey = '';

const actor = { id: 'test' };

const options = () => ({
  reads: cp.reads,
  verifyDeveloperToken: developerTokenVerifier(db.pool),
  adminToken: ADMIN,
  analytics: chdb,
  objects,
  pool: db.pool,
  maxExportRows: 5_000,
  maxExportDays: 366,
  live: liveSessions({ pollMs: 100, heartbeatMs: 1_000 }),
});

const liveSessions = (timing: { pollMs: number; heartbeatMs: number }) =>
  new LiveSessions(chdb, { ...timing, maxPerSession: 8, maxPerOrg: 64 });

const get = async (url: string, token: string | null = tok.ada!) => {
  const res = await app.inject({
    method: 'GET',
    url,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return res;
};
const json = (res: { body: string }) => JSON.parse(res.body) as Record<string, unknown>;

beforeAll(async () => {
  db = await createTestDatabase();
  cp = makeControlPlane(new PostgresEventStore(db.pool, db.url), db.pool, randomBytes(32));
  wsA = (await cp.createWorkspace(actor, 'Query A')).workspace_id;
  wsB = (await cp.createWorkspace(actor, 'Query B')).workspace_id;
  const tenant = async (ws: string, org: string, project: string, keyName: string) => {
    const o = (await cp.createOrganization(actor, ws, org, { ifMissing: true })).org_id;
    const p = (await cp.createProject(actor, o, project, { ifMissing: true })).project_id;
    const k = await cp.createApiKey(actor, p, keyName);
    return {
      tenant: { org_id: o, project_id: p, workspace_id: ws, api_key_id: k.api_key_id },
      secret: k.api_key,
    };
  };
  t.a1 = (await tenant(wsA, 'Org A', 'Proj A', 'key one')).tenant;
  const a2 = await tenant(wsA, 'Org A', 'Proj A', 'key two');
  t.a2 = a2.tenant;
  gatewayKey = a2.secret;
  t.a3 = (await tenant(wsA, 'Org A2', 'Proj A2', 'key three')).tenant;
  t.b = (await tenant(wsB, 'Org B', 'Proj B', 'key b')).tenant;
  await cp.addUser(actor, 'ada@example.com', { workspaceId: wsA, role: 'member' });
  await cp.addUser(actor, 'mal@example.com', { workspaceId: wsB, role: 'member' });
  tok.ada = (await cp.issueSession(actor, 'ada@example.com', 3_600_000)).token;
  tok.mal = (await cp.issueSession(actor, 'mal@example.com', 3_600_000)).token;
  const adaId = (await cp.reads.userByEmail('ada@example.com'))!.user_id;
  const devToken = async (name: string, orgId: string, projectId: string | null) => {
    const secret = `svc_dev_${randomBytes(24).toString('base64url')}`;
    await db.pool.query(
      `INSERT INTO rm_developer_tokens (token_id, user_id, org_id, project_id, workspace_id, name, prefix, token_hash, created_at)
       VALUES ($1, $2, $3, $4, $5, $1, $6, $7, now())`,
      [name, adaId, orgId, projectId, wsA, secret.slice(0, 12), hashSecret(secret)],
    );
    return secret;
  };
  tok.dev = await devToken('dev_org', t.a1.org_id, null);
  tok.devOtherProject = await devToken('dev_a2', t.a3.org_id, t.a3.project_id);

  // Dimensions: key one is team=alpha until mid-month, then beta; key two is gamma; key three none.
  const team = (await cp.defineDimension(actor, wsA, 'team', '')).definition_id;
  const env = (await cp.defineDimension(actor, wsA, 'env', '')).definition_id;
  const assign = (key: string, def: string, value: string, from: string, to: string | null) =>
    db.pool.query(
      'INSERT INTO rm_dimension_assignments (api_key_id, definition_id, value, effective_from, effective_to) VALUES ($1,$2,$3,$4,$5)',
      [key, def, value, from, to],
    );
  await assign(t.a1.api_key_id, team, 'alpha', '2025-01-01T00:00:00Z', '2025-03-16T00:00:00Z');
  await assign(t.a1.api_key_id, team, 'beta', '2025-03-16T00:00:00Z', null);
  await assign(t.a2.api_key_id, team, 'gamma', '2025-01-01T00:00:00Z', null);
  await assign(t.a1.api_key_id, env, 'prod', '2025-01-01T00:00:00Z', null);

  dir = await mkdtemp(join(tmpdir(), 'svc-query-'));
  chdb = await ChdbAnalyticsStore.open({ path: join(dir, 'ch'), database: 'query_t', createDatabase: true });
  await migrateClickHouse(chdb);
  objects = new FsObjectStore(join(dir, 'objects'));

  // A month of mixed traffic (March 2025) across both workspaces, with itemization gaps and failures.
  const rand = prng(13);
  const kinds = ['complete', 'complete', 'complete', 'gap', 'none', 'failed'] as const;
  const tenants = [t.a1, t.a2, t.a3, t.b];
  for (let i = 0; i < 900; i++) {
    const startedAt = new Date(Date.UTC(2025, 2, 1) + Math.floor(rand() * 31 * 86_400_000));
    month.push(
      generateRequest({
        tenant: tenants[i % 4]!,
        requestId: `req_m_${i}`,
        startedAt,
        rand,
        sessionId: `ses_${i % 4}_${i % 7}`,
        itemization: kinds[Math.floor(rand() * kinds.length)]!,
      }),
    );
  }
  // Boundary rows: last millisecond of February and the first instant of April stay outside.
  const edge = (id: string, at: string) =>
    generateRequest({ tenant: t.a1!, requestId: id, startedAt: new Date(at), rand });
  const outside = [edge('req_feb', '2025-02-28T23:59:59.999Z'), edge('req_apr', '2025-04-01T00:00:00.000Z')];
  await insertGenerated((table, rows) => chdb.insert(table, rows), [...month, ...outside]);
  // Redelivery: the same rows again, later; FINAL must count them once.
  await insertGenerated(
    (table, rows) => chdb.insert(table, rows),
    month.slice(0, 50).map((g) => ({
      ...g,
      request: { ...g.request, ingested_at: new Date(Date.UTC(2025, 3, 2)) },
      costLines: g.costLines.map((l) => ({ ...l, ingested_at: new Date(Date.UTC(2025, 3, 2)) })),
    })),
  );

  // Two requests with stored bodies: one intact, one whose pack is tampered after the row was written.
  for (const [id, tamper] of [
    ['req_body_ok', false],
    ['req_body_bad', true],
  ] as const) {
    const body = Buffer.from(JSON.stringify({ messages: [{ role: 'user', content: `hello ${id}` }] }));
    const header = Buffer.from(`SVCF1 ${id} res ${body.byteLength} ${blake3Hex(body)}\n`);
    const key = `packs/2025/03/10/${id}.pack`;
    await objects.put(t.a1.org_id, key, Buffer.concat([header, body]));
    const g = generateRequest({
      tenant: t.a1,
      requestId: id,
      startedAt: new Date('2025-03-10T10:00:00Z'),
      rand,
      itemization: 'complete',
      body: {
        res_body_pack: key,
        res_body_offset: header.byteLength,
        res_body_length: body.byteLength,
        res_body_byte_count: body.byteLength,
        res_body_blake3: blake3Hex(body),
      },
    });
    month.push(g);
    await insertGenerated((table, rows) => chdb.insert(table, rows), [g]);
    if (tamper) {
      const evil = Buffer.from(body);
      evil[evil.byteLength - 3] = 0x58;
      await writeFile(join(dir, 'objects', t.a1.org_id, key), Buffer.concat([header, evil]));
    }
  }

  app = Fastify();
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof ServiceError) return reply.code(err.status).send(renderApiError(err));
    return reply.code(500).send({ error: 'internal_error', message: String(err) });
  });
  registerQueryRoutes(app, options());
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await chdb?.close();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const spendOf = (rows: readonly GeneratedRequest[], pick: (g: GeneratedRequest) => boolean) =>
  formatUsd(rows.filter(pick).reduce((s, g) => addUsd(s, g.total), ZERO_USD));
const sumColumn = (rows: Record<string, unknown>[], col = 'cost_usd') =>
  formatUsd(rows.reduce((s, r) => addUsd(s, parseUsd(String(r[col]))), ZERO_USD));

describe('finance reconciliation (March 2025, mixed traffic, dimensions)', () => {
  it('cost_detail sums to priced request spend to the last decimal, per org and per workspace', async () => {
    const orgA = t.a1!.org_id;
    const expected = spendOf(month, (g) => g.request.org_id === orgA);
    const res = await get(
      `/api/exports/panel?org_id=${orgA}&from=2025-03-01&to=2025-04-01&format=json&dimension=team,env`,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-disposition']).toContain('attachment');
    const body = json(res) as { columns: string[]; rows: Record<string, string | null>[] };
    expect(body.columns.filter((c) => c.endsWith('_usd'))).toEqual(['cost_usd']);
    expect(body.columns).toContain('dim_team');
    expect(body.columns).toContain('api_key_prefix');
    expect(sumColumn(body.rows)).toBe(expected);
    expect(body.rows.some((r) => r.cost_band === 'unitemized')).toBe(true);
    expect(new Set(body.rows.map((r) => r.dim_team))).toEqual(new Set(['alpha', 'beta', 'gamma']));
    // The label is the one in force at each request's time: alpha only before the 16th.
    for (const r of body.rows) {
      if (r.dim_team === 'alpha') expect(r.usage_date_utc! < '2025-03-16').toBe(true);
      if (r.dim_team === 'beta') expect(r.usage_date_utc! >= '2025-03-16').toBe(true);
    }
    expect(body.rows.every((r) => r.org_name === 'Org A')).toBe(true);

    const ws = await get(`/api/exports/panel?workspace_id=${wsA}&from=2025-03-01&to=2025-04-01&format=csv`);
    expect(ws.statusCode, ws.body).toBe(200);
    const lines = ws.body.trim().split('\r\n');
    const cols = lines[0]!.split(',');
    const idx = cols.indexOf('cost_usd');
    const csvSum = formatUsd(
      lines.slice(1).reduce((s, l) => addUsd(s, parseUsd(l.split(',')[idx]!)), ZERO_USD),
    );
    expect(csvSum).toBe(spendOf(month, (g) => g.request.workspace_id === wsA));
  });

  it('the workspace report agrees with the export, with and without a dimension', async () => {
    const res = await get(`/api/reports/workspace?workspace_id=${wsA}&month=2025-03`);
    expect(res.statusCode, res.body).toBe(200);
    const body = json(res) as { total_cost_usd: string; data: Record<string, unknown>[] };
    const expected = spendOf(month, (g) => g.request.workspace_id === wsA);
    expect(body.total_cost_usd).toBe(expected);
    expect(sumColumn(body.data)).toBe(expected);
    const dim = json(
      await get(`/api/reports/workspace?workspace_id=${wsA}&month=2025-03&dimension=team`),
    ) as {
      total_cost_usd: string;
      data: { dimension_value: string | null }[];
    };
    expect(dim.total_cost_usd).toBe(expected);
    expect(dim.data.some((r) => r.dimension_value === null)).toBe(true);
    const gamma = json(
      await get(
        `/api/reports/workspace?workspace_id=${wsA}&month=2025-03&dimension=team&dimension_value=gamma`,
      ),
    ) as { total_cost_usd: string };
    expect(gamma.total_cost_usd).toBe(spendOf(month, (g) => g.request.api_key_id === t.a2!.api_key_id));
    const open = await get(
      `/api/reports/workspace?workspace_id=${wsA}&month=${new Date().toISOString().slice(0, 7)}`,
    );
    expect(open.statusCode).toBe(400);
  });
});

describe('export limits', () => {
  const base = () => `/api/exports/panel?org_id=${t.a1!.org_id}`;
  it('refuses a window over 366 days', async () => {
    const res = await get(`${base()}&from=2024-01-01&to=2025-01-03`);
    expect(res.statusCode).toBe(400);
    expect(json(res).message).toMatch(/366 days/);
  });
  it('refuses more than 8 dimension keys', async () => {
    const res = await get(`${base()}&from=2025-03-01&to=2025-04-01&dimension=a,b,c,d,e,f,g,h,i`);
    expect(res.statusCode).toBe(400);
    expect(json(res).message).toMatch(/at most 8/);
  });
  it('refuses an export over the row cap', async () => {
    // The cap is configurable; a second app with a small one avoids generating 100,000 rows here.
    const small = Fastify();
    small.setErrorHandler((err, _req, reply) =>
      err instanceof ServiceError
        ? reply.code(err.status).send(renderApiError(err))
        : reply.code(500).send({}),
    );
    registerQueryRoutes(small, { ...options(), maxExportRows: 50 });
    const res = await small.inject({
      method: 'GET',
      url: `/api/exports/panel?workspace_id=${wsA}&from=2025-03-01&to=2025-04-01`,
      headers: { authorization: `Bearer ${tok.ada}` },
    });
    await small.close();
    expect(res.statusCode, res.body.slice(0, 200)).toBe(400);
    expect(json(res).message).toMatch(/row cap/);
  });
  it('accepts RFC 3339 bounds and serves the other panels', async () => {
    const res = await get(
      `${base()}&from=2025-03-01T00:00:00Z&to=2025-03-08T00:00:00%2B00:00&panel=usage_daily&format=json`,
    );
    expect(res.statusCode, res.body).toBe(200);
    const rows = (json(res) as { rows: Record<string, string>[] }).rows;
    expect(rows.every((r) => r.usage_date_utc! >= '2025-03-01' && r.usage_date_utc! < '2025-03-08')).toBe(
      true,
    );
  });
});

describe('credentials', () => {
  it('accepts a developer token bound to the org and refuses a service API key', async () => {
    const ok = await get(`/api/requests?org_id=${t.a1!.org_id}&limit=5`, tok.dev!);
    expect(ok.statusCode).toBe(200);
    const page = json(ok) as { total: number; has_more: boolean; data: unknown[] };
    expect(page.data).toHaveLength(5);
    expect(page.has_more).toBe(true);
    const refused = await get(`/api/requests?org_id=${t.a1!.org_id}`, gatewayKey);
    expect(refused.statusCode).toBe(401);
    expect(json(refused).message).toMatch(/service API keys are not accepted/);
    expect((await get(`/api/requests?org_id=${t.a1!.org_id}`, null)).statusCode).toBe(401);
  });
  it('pins a project-bound developer token to its project', async () => {
    const res = await get(`/api/requests?org_id=${t.a3!.org_id}&project_id=other`, tok.devOtherProject!);
    expect(res.statusCode).toBe(403);
    expect((await get(`/api/requests?org_id=${t.a1!.org_id}`, tok.devOtherProject!)).statusCode).toBe(403);
  });
});

describe('requests, sessions, usage', () => {
  it('lists with filters and pagination', async () => {
    const org = t.a1!.org_id;
    const listed = await get(`/api/requests?org_id=${org}&from=2025-03-01&to=2025-04-01&limit=500`);
    expect(listed.statusCode, listed.body.slice(0, 300)).toBe(200);
    const all = json(listed) as { total: number };
    expect(all.total).toBe(month.filter((g) => g.request.org_id === org).length);
    const errs = json(await get(`/api/requests?org_id=${org}&status_class=5xx&limit=500`)) as {
      data: { http_status: number }[];
    };
    expect(errs.data.every((r) => r.http_status >= 500)).toBe(true);
    const facets = json(await get(`/api/requests/facets?org_id=${org}`)) as { providers: string[] };
    expect(facets.providers.length).toBeGreaterThan(0);
    const sessions = json(await get(`/api/sessions?org_id=${org}`)) as {
      total: number;
      data: { session_id: string }[];
    };
    expect(sessions.total).toBeGreaterThan(0);
    const timeline = json(
      await get(`/api/sessions/${sessions.data[0]!.session_id}/timeline?org_id=${org}`),
    ) as {
      data: { started_at: string }[];
    };
    expect(timeline.data.length).toBeGreaterThan(0);
    const usage = json(await get(`/api/usage?org_id=${org}&from=2025-03-01&to=2025-04-01`)) as {
      totals: { cost_usd: string };
    };
    expect(usage.totals.cost_usd).toBe(spendOf(month, (g) => g.request.org_id === org));
    expect((await get(`/api/metrics/overview?org_id=${org}`)).statusCode).toBe(200);
  });

  it('pages through every request of the org once, newest first, redelivered copies included once', async () => {
    const org = t.a1!.org_id;
    const expected = month
      .filter((g) => g.request.org_id === org)
      .map((g) => ({ id: String(g.request.request_id), at: String(g.request.started_at) }))
      .sort((x, y) => (x.at === y.at ? (x.id < y.id ? 1 : -1) : x.at < y.at ? 1 : -1))
      .map((x) => x.id);
    const seen: string[] = [];
    for (let offset = 0; ; offset += 97) {
      const page = json(
        await get(`/api/requests?org_id=${org}&from=2025-03-01&to=2025-04-01&limit=97&offset=${offset}`),
      ) as { data: { request_id: string }[]; has_more: boolean };
      seen.push(...page.data.map((r) => r.request_id));
      if (!page.has_more) break;
    }
    expect(seen).toEqual(expected);
    // A session's timeline runs oldest first, through the same paging.
    const session = month.find((g) => g.request.org_id === org && g.request.session_id)!.request.session_id;
    const inSession = month
      .filter((g) => g.request.org_id === org && g.request.session_id === session)
      .map((g) => ({ id: String(g.request.request_id), at: String(g.request.started_at) }))
      .sort((x, y) => (x.at === y.at ? (x.id < y.id ? -1 : 1) : x.at < y.at ? -1 : 1))
      .map((x) => x.id);
    const timeline = json(await get(`/api/sessions/${session}/timeline?org_id=${org}&limit=500`)) as {
      data: { request_id: string }[];
    };
    expect(timeline.data.map((r) => r.request_id)).toEqual(inSession);
  });

  it('usage answers the series, the split by provider and model, and the totals from one window', async () => {
    const org = t.a1!.org_id;
    const mine = month.filter((g) => g.request.org_id === org);
    const body = json(await get(`/api/usage?org_id=${org}&from=2025-03-01&to=2025-04-01`)) as {
      totals: { requests: number; cost_usd: string; total_tokens: number };
      series: { bucket: string; requests: number; cost_usd: string }[];
      by_model: { provider: string; model: string; requests: number; cost_usd: string; errors: number }[];
    };
    expect(body.totals.requests).toBe(mine.length);
    expect(body.totals.total_tokens).toBe(mine.reduce((s, g) => s + Number(g.request.total_tokens), 0));
    const days = [...new Set(mine.map((g) => String(g.request.started_at).slice(0, 10)))].sort();
    expect(body.series.map((b) => b.bucket)).toEqual(days);
    expect(sumColumn(body.series)).toBe(body.totals.cost_usd);
    for (const b of body.series)
      expect(b.requests).toBe(mine.filter((g) => String(g.request.started_at).startsWith(b.bucket)).length);
    const models = new Map<string, GeneratedRequest[]>();
    for (const g of mine) {
      const k = `${g.request.provider}/${g.request.model_served}`;
      models.set(k, [...(models.get(k) ?? []), g]);
    }
    expect(body.by_model).toHaveLength(models.size);
    for (const m of body.by_model) {
      const rows = models.get(`${m.provider}/${m.model}`)!;
      expect(m.requests).toBe(rows.length);
      expect(m.cost_usd).toBe(spendOf(rows, () => true));
      expect(m.errors).toBe(rows.filter((g) => Number(g.request.http_status) >= 400).length);
      expect(Object.keys(m)).not.toContain('bucket');
    }
    const costs = body.by_model.map((m) => parseUsd(m.cost_usd));
    expect(costs).toEqual([...costs].sort((x, y) => (x === y ? 0 : x > y ? -1 : 1)));
    const empty = json(await get(`/api/usage?org_id=${org}&from=2020-01-01&to=2020-02-01`)) as {
      totals: { requests: number; cost_usd: string };
      series: unknown[];
      by_model: unknown[];
    };
    expect(empty).toMatchObject({ totals: { requests: 0, cost_usd: '0' }, series: [], by_model: [] });
  });

  it('records feedback on a row of the org', async () => {
    const res = await app.inject({
      method: 'POST',
      url: `/api/requests/req_m_0/feedback?org_id=${t.a1!.org_id}`,
      headers: { authorization: `Bearer ${tok.ada}` },
      payload: { rating: 'up', comment: 'good' },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('verified body fetch', () => {
  it('serves an intact body and refuses a tampered pack without serving a byte', async () => {
    const org = t.a1!.org_id;
    const detail = json(await get(`/api/requests/req_body_ok?org_id=${org}`)) as {
      body_urls: { response: string | null; request: string | null };
    };
    expect(detail.body_urls.request).toBeNull();
    const ok = await get(detail.body_urls.response!);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('hello req_body_ok');
    const bad = await get(`/api/body/by-request/req_body_bad?org_id=${org}&side=response`);
    expect(bad.statusCode).toBe(502);
    expect(bad.body).not.toContain('hello');
    expect(json(bad).message).toMatch(/integrity/);
  });
});

describe('request detail (SPEC 4.5, for the console)', () => {
  it('carries the cost lines once each, in order, with exact amounts, despite redelivery', async () => {
    // The first 50 requests were inserted twice: FINAL must answer each line once.
    const g = month.slice(0, 50).find((m) => m.costLines.length > 1 && m.request.org_id === t.a1!.org_id)!;
    const detail = json(await get(`/api/requests/${g.request.request_id}?org_id=${t.a1!.org_id}`)) as {
      cost_lines: { line_index: number; amount: string; meter: string }[];
    };
    expect(detail.cost_lines.map((l) => l.line_index)).toEqual(g.costLines.map((l) => l.line_index));
    expect(detail.cost_lines.map((l) => l.amount)).toEqual(g.costLines.map((l) => String(l.amount)));
    expect(detail.cost_lines.map((l) => l.meter)).toEqual(g.costLines.map((l) => l.meter));
  });
});

describe('tenant isolation', () => {
  it('every route asked with another org leaks nothing', async () => {
    const orgA = t.a1!.org_id;
    const routes = [
      `/api/requests?org_id=${orgA}`,
      `/api/requests/facets?org_id=${orgA}`,
      `/api/requests/req_m_0?org_id=${orgA}`,
      `/api/sessions?org_id=${orgA}`,
      `/api/sessions/facets?org_id=${orgA}`,
      `/api/sessions/ses_0_0/timeline?org_id=${orgA}`,
      `/api/sessions/ses_0_0/live?org_id=${orgA}`,
      `/api/usage?org_id=${orgA}`,
      `/api/metrics/overview?org_id=${orgA}`,
      `/api/reports/workspace?workspace_id=${wsA}&month=2025-03`,
      `/api/exports/panel?org_id=${orgA}&from=2025-03-01&to=2025-04-01`,
      `/api/exports/panel?workspace_id=${wsA}&from=2025-03-01&to=2025-04-01`,
      `/api/body/by-request/req_body_ok?org_id=${orgA}`,
    ];
    for (const url of routes) {
      const res = await get(url, tok.mal!);
      expect(res.statusCode, url).toBe(403);
      expect(res.body).not.toContain('req_');
    }
    const post = await app.inject({
      method: 'POST',
      url: `/api/requests/req_m_0/feedback?org_id=${orgA}`,
      headers: { authorization: `Bearer ${tok.mal}` },
      payload: { rating: 'down' },
    });
    expect(post.statusCode).toBe(403);
    // Own org, another org's request id: not found, not the row.
    const orgB = t.b!.org_id;
    expect((await get(`/api/requests/req_m_0?org_id=${orgB}`, tok.mal!)).statusCode).toBe(404);
    expect((await get(`/api/body/by-request/req_body_ok?org_id=${orgB}`, tok.mal!)).statusCode).toBe(404);
    const own = json(await get(`/api/requests?org_id=${orgB}&limit=500`, tok.mal!)) as {
      data: { org_id: string }[];
    };
    expect(own.data.every((r) => r.org_id === orgB)).toBe(true);
    // A developer token of org A cannot read org B, nor a workspace export beyond its org.
    expect((await get(`/api/requests?org_id=${orgB}`, tok.dev!)).statusCode).toBe(403);
    const devWs = json(await get(`/api/reports/workspace?workspace_id=${wsA}&month=2025-03`, tok.dev!)) as {
      data: { org_id: string }[];
    };
    expect(devWs.data.every((r) => r.org_id === orgA)).toBe(true);
  });
});

describe('gRPC QueryService', () => {
  it('lists, gets and snapshots monthly spend behind the service token', async () => {
    const server = new grpc.Server();
    addQueryService(server, chdb, ADMIN);
    const port = await bindGrpc(server, '127.0.0.1', 0);
    const file = 'svc/query/v1/query.proto';
    const client = grpcClient(port, file, 'svc.query.v1.QueryService', ADMIN);
    const anon = grpcClient(port, file, 'svc.query.v1.QueryService', 'wrong');
    try {
      const org = t.a1!.org_id;
      const list = await client.call<{ requests: { org_id: string }[]; total: string; has_more: boolean }>(
        'ListRequests',
        { org_id: org, limit: 10 },
      );
      expect(list.requests).toHaveLength(10);
      expect(list.has_more).toBe(true);
      const one = await client.call<{ request_id: string; total_cost_usd: string }>('GetRequest', {
        org_id: org,
        request_id: 'req_m_0',
      });
      const g0 = month.find((g) => g.request.request_id === 'req_m_0')!;
      expect(one.total_cost_usd).toBe(formatUsd(g0.total));
      const snap = await client.call<{ entries: { scope: string; id: string; spend_usd: string }[] }>(
        'MonthlyUsageSnapshot',
        { month: '2025-03', org_ids: [org] },
      );
      const orgEntry = snap.entries.find((e) => e.scope === 'org' && e.id === org)!;
      expect(orgEntry.spend_usd).toBe(spendOf(month, (g) => g.request.org_id === org));
      const keyEntry = snap.entries.find((e) => e.scope === 'api_key' && e.id === t.a2!.api_key_id)!;
      expect(keyEntry.spend_usd).toBe(spendOf(month, (g) => g.request.api_key_id === t.a2!.api_key_id));
      await expect(anon.call('ListRequests', { org_id: org })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
      // The gateway's adapter for a QueryService in another process (SVC_GATEWAY_QUERY_GRPC_ENDPOINT).
      const remote = grpcMonthlySpend(`127.0.0.1:${port}`, ADMIN);
      try {
        const viaAdapter = await remote.spend('2025-03', [org]);
        expect(viaAdapter.month).toBe('2025-03');
        expect(viaAdapter.entries).toContainEqual(
          expect.objectContaining({ scope: 'org', id: org, spend_usd: orgEntry.spend_usd }),
        );
        await expect(
          grpcMonthlySpend(`127.0.0.1:${port}`, 'wrong').spend('2025-03', [org]),
        ).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      } finally {
        remote.close();
      }
    } finally {
      client.close();
      anon.close();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
    }
  });
});

describe('live session stream', () => {
  it('streams new request.completed rows of the org and session once each, with heartbeats', async () => {
    const live = Fastify();
    registerQueryRoutes(live, { ...options(), live: liveSessions({ pollMs: 50, heartbeatMs: 100 }) });
    const url = await live.listen({ port: 0, host: '127.0.0.1' });
    const abort = new AbortController();
    try {
      const res = await fetch(`${url}/api/sessions/ses_live/live?org_id=${t.a1!.org_id}`, {
        headers: { authorization: `Bearer ${tok.ada}` },
        signal: abort.signal,
      });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const rand = prng(99);
      const now = new Date();
      const mine = generateRequest({
        tenant: t.a1!,
        requestId: 'req_live_1',
        startedAt: now,
        rand,
        sessionId: 'ses_live',
        ingestedAt: now,
      });
      const otherSession = generateRequest({
        tenant: t.a1!,
        requestId: 'req_live_x',
        startedAt: now,
        rand,
        sessionId: 'ses_other',
        ingestedAt: now,
      });
      const otherOrg = generateRequest({
        tenant: t.b!,
        requestId: 'req_live_b',
        startedAt: now,
        rand,
        sessionId: 'ses_live',
        ingestedAt: now,
      });
      await insertGenerated((table, rows) => chdb.insert(table, rows), [mine, otherSession, otherOrg]);
      // The same row redelivered must not be announced twice.
      await insertGenerated((table, rows) => chdb.insert(table, rows), [mine]);
      const reader = res.body!.getReader();
      let text = '';
      const deadline = Date.now() + 5_000;
      while (Date.now() < deadline && !(text.includes('req_live_1') && text.includes(': heartbeat'))) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      await new Promise((r) => setTimeout(r, 300));
      abort.abort();
      expect(text).toContain('event: request.completed');
      expect(text.split('id: req_live_1').length - 1).toBe(1);
      expect(text).not.toContain('req_live_x');
      expect(text).not.toContain('req_live_b');
    } finally {
      abort.abort();
      await live.close();
    }
  });
});

describe('activity panels: legacy manifest CSV, org scope only (SPEC 4.5)', () => {
  it('usage_daily answers the manifest block, then the CSV header and one row per day and model', async () => {
    const org = (await cp.createOrganization(actor, wsA, 'Org Activity')).org_id;
    const project = (await cp.createProject(actor, org, 'Proj Activity')).project_id;
    const key = (await cp.createApiKey(actor, project, 'key activity')).api_key_id;
    const tenant = { org_id: org, project_id: project, workspace_id: wsA, api_key_id: key };
    const rand = prng(45);
    const rows = [
      generateRequest({ tenant, requestId: 'req_act_1', startedAt: new Date('2025-05-02T08:00:00Z'), rand }),
      generateRequest({ tenant, requestId: 'req_act_2', startedAt: new Date('2025-05-03T23:59:59Z'), rand }),
    ];
    await insertGenerated((table, r) => chdb.insert(table, r), rows);
    const at = new Date();
    const fixed = Fastify();
    registerQueryRoutes(fixed, { ...options(), now: () => at });
    const res = await fixed.inject({
      method: 'GET',
      url: `/api/exports/panel?org_id=${org}&from=2025-05-01&to=2025-06-01&panel=usage_daily`,
      headers: { authorization: `Bearer ${tok.ada}` },
    });
    await fixed.close();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(
      'attachment; filename="usage_daily_2025-05-01_2025-06-01.csv"',
    );
    const line = (g: GeneratedRequest) => {
      const r = g.request;
      return [
        String(r.started_at).slice(0, 10),
        org,
        'Org Activity',
        project,
        'Proj Activity',
        r.provider,
        r.model_served,
        '1',
        '0',
        r.prompt_tokens,
        r.completion_tokens,
        r.total_tokens,
        '0',
        '0',
        formatUsd(g.total),
      ].join(',');
    };
    expect(res.body).toBe(
      [
        '# svc-manifest v1',
        '# panel=usage_daily',
        '# scope=org',
        `# org_id=${org}`,
        '# from=2025-05-01T00:00:00.000Z',
        '# to=2025-06-01T00:00:00.000Z',
        '# dimension=',
        `# generated_at=${at.toISOString()}`,
        '# rows=2',
        'usage_date_utc,org_id,org_name,project_id,project_name,provider,model,requests,errors,prompt_tokens,completion_tokens,total_tokens,cache_read_tokens,cache_write_tokens,cost_usd',
        line(rows[0]!),
        line(rows[1]!),
        '',
      ].join('\r\n'),
    );
  });

  it('usage_breakdown has the same manifest, with the dimension keys, and JSON carries it too', async () => {
    const org = t.a1!.org_id;
    const url = `/api/exports/panel?org_id=${org}&from=2025-03-01&to=2025-03-02&panel=usage_breakdown&dimension=team`;
    const csv = await get(url);
    expect(csv.statusCode, csv.body).toBe(200);
    const lines = csv.body.split('\r\n');
    expect(lines.slice(0, 7)).toEqual([
      '# svc-manifest v1',
      '# panel=usage_breakdown',
      '# scope=org',
      `# org_id=${org}`,
      '# from=2025-03-01T00:00:00.000Z',
      '# to=2025-03-02T00:00:00.000Z',
      '# dimension=team',
    ]);
    expect(lines[7]).toMatch(/^# generated_at=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(lines[9]).toBe(
      'usage_date_utc,org_id,org_name,project_id,project_name,api_key_id,api_key_name,api_key_prefix,provider,model,meter,modality,tier,dim_team,quantity',
    );
    const data = lines.slice(10, -1);
    expect(data.length).toBeGreaterThan(0);
    expect(lines[8]).toBe(`# rows=${data.length}`);
    expect(lines.at(-1)).toBe('');
    const asJson = json(await get(`${url}&format=json`)) as {
      manifest: Record<string, string>;
      rows: unknown[];
    };
    expect(asJson.manifest).toMatchObject({
      panel: 'usage_breakdown',
      scope: 'org',
      org_id: org,
      dimension: 'team',
      rows: String(data.length),
    });
    expect(asJson.rows).toHaveLength(data.length);
    // The finance panel keeps its plain CSV: no manifest block.
    const finance = await get(`/api/exports/panel?org_id=${org}&from=2025-03-01&to=2025-03-02`);
    expect(finance.body.startsWith('usage_date_utc,')).toBe(true);
  });

  it('refuses every scope but one org with 400 naming the parameter', async () => {
    const a = t.a1!;
    const base = '&from=2025-03-01&to=2025-04-01';
    for (const panel of ['usage_daily', 'usage_breakdown']) {
      for (const [param, url] of [
        ['workspace_id', `/api/exports/panel?panel=${panel}&workspace_id=${wsA}${base}`],
        ['workspace_id', `/api/exports/panel?panel=${panel}&org_id=${a.org_id}&workspace_id=${wsA}${base}`],
        [
          'project_id',
          `/api/exports/panel?panel=${panel}&org_id=${a.org_id}&project_id=${a.project_id}${base}`,
        ],
        [
          'api_key_id',
          `/api/exports/panel?panel=${panel}&org_id=${a.org_id}&api_key_id=${a.api_key_id}${base}`,
        ],
        ['org_id', `/api/exports/panel?panel=${panel}${base}`],
      ] as const) {
        const res = await get(url);
        expect(res.statusCode, url).toBe(400);
        expect(json(res).param, url).toBe(param);
        expect(json(res).message, url).toMatch(/org_id only|org scope only/);
      }
    }
    // A developer token bound to one project cannot read an org-wide activity panel.
    const bound = await get(
      `/api/exports/panel?panel=usage_daily&org_id=${t.a3!.org_id}${base}`,
      tok.devOtherProject!,
    );
    expect(bound.statusCode).toBe(403);
    expect(json(bound).param).toBe('project_id');
    // The finance panel still takes project and key scope.
    const finance = await get(
      `/api/exports/panel?org_id=${a.org_id}&project_id=${a.project_id}&api_key_id=${a.api_key_id}${base}`,
    );
    expect(finance.statusCode, finance.body.slice(0, 200)).toBe(200);
    const unknown = await get(`/api/exports/panel?org_id=${a.org_id}&panel=usage_weekly${base}`);
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown).message).toMatch(/legacy manifest/);
  });
});
