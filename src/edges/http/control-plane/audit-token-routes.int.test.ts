import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/helpers/postgres.js';
import { PostgresBus } from '../../../events/postgres/bus.js';
import { PostgresEventStore } from '../../../events/postgres/event-store.js';
import { hashSecret } from '../../../lib/crypto.js';
import { HealthRegistry } from '../../../lib/health.js';
import { auditRelay } from '../../../projections/audit-relay/projection.js';
import { rebuildProjection } from '../../../projections/runner.js';
import { makeAuth } from '../../../roles/auth.js';
import { type ControlPlane, makeControlPlane } from '../../../roles/control-plane.js';
import { createHttpServer } from '../server.js';
import { registerControlPlaneRoutes } from './routes.js';

// Audit read tokens (SPEC 5: bearer token with scope audit:read, one workspace each) through the
// control-plane routes on a real event store: who may mint, list and revoke them, what a listing
// never shows, what verifyAuditToken answers, and what the audit relay publishes.

const ADMIN = 'admin-token-for-audit-token-routes';
const cli = { id: 'cli' };
const HOUR = 3_600_000;

let db: TestDatabase;
let store: PostgresEventStore;
let cp: ControlPlane;
let app: FastifyInstance;
let wsA: string;
let wsB: string;
const sessions = { managerA: '', memberA: '', managerB: '' };

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 9));
  app = await createHttpServer({
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    health: new HealthRegistry(),
    roles: [
      { name: 'control-plane', http: (scope) => registerControlPlaneRoutes(scope, cp, cp.reads, ADMIN) },
    ],
  });
  wsA = (await cp.createWorkspace(cli, 'Audit A')).workspace_id;
  wsB = (await cp.createWorkspace(cli, 'Audit B')).workspace_id;
  const users: [keyof typeof sessions, string, string, 'manager' | 'member'][] = [
    ['managerA', 'manager-a@audit.test', wsA, 'manager'],
    ['memberA', 'member-a@audit.test', wsA, 'member'],
    ['managerB', 'manager-b@audit.test', wsB, 'manager'],
  ];
  for (const [who, email, workspaceId, role] of users) {
    await cp.addUser(cli, email, { workspaceId, role });
    sessions[who] = (await cp.issueSession(cli, email, HOUR)).token;
  }
}, 60_000);
afterAll(async () => {
  await app?.close();
  await store?.close();
  await db?.drop();
});

const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, token: string | null, body?: unknown) => {
  const r = await app.inject({
    method,
    url,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: r.statusCode, body: r.json() as Record<string, unknown>, raw: r.body };
};

interface Minted {
  id: string;
  secret: string;
  prefix: string;
  workspace_id: string;
  name: string;
  scopes: string[];
}
const mint = async (token: string, workspaceId: string, name: string) => {
  const r = await call('POST', '/api/audit-tokens', token, { workspace_id: workspaceId, name });
  expect(r.status, r.raw).toBe(201);
  return r.body as unknown as Minted;
};

describe('minting and listing (SPEC 5)', () => {
  it('the administrator mints a token for workspace A: the secret is answered once and never listed', async () => {
    const t = await mint(ADMIN, wsA, 'siem export');
    expect(t).toEqual({
      id: expect.stringMatching(/^aut_/),
      secret: expect.stringMatching(/^svc_audit_[A-Za-z0-9_-]{43}$/),
      prefix: t.secret.slice(0, 15),
      workspace_id: wsA,
      name: 'siem export',
      scopes: ['audit:read'],
    });
    for (const url of [`/api/audit-tokens?workspace_id=${wsA}`, '/api/audit-tokens']) {
      const list = await call('GET', url, ADMIN);
      expect(list.status).toBe(200);
      const row = (list.body.data as Record<string, unknown>[]).find((r) => r.id === t.id);
      expect(row).toMatchObject({
        id: t.id,
        workspace_id: wsA,
        name: 'siem export',
        prefix: t.prefix,
        scopes: ['audit:read'],
        created_by: 'admin',
        revoked_at: null,
      });
      expect(Object.keys(row!).sort()).toEqual(
        ['created_at', 'created_by', 'id', 'name', 'prefix', 'revoked_at', 'scopes', 'workspace_id'].sort(),
      );
      expect(list.raw).not.toContain(t.secret);
      expect(list.raw).not.toContain(hashSecret(t.secret));
    }
  });

  it('verifyAuditToken answers the token, workspace A and scope audit:read', async () => {
    const t = await mint(ADMIN, wsA, 'verify me');
    expect(await cp.reads.verifyAuditToken(t.secret)).toEqual({
      audit_token_id: t.id,
      workspace_id: wsA,
      scopes: ['audit:read'],
    });
  });

  it('an unknown workspace is 404 naming workspace_id; a bad body is 400; no bearer is 401', async () => {
    const unknown = await call('POST', '/api/audit-tokens', ADMIN, { workspace_id: 'ws_nope', name: 'x' });
    expect(unknown).toMatchObject({
      status: 404,
      body: { error: 'not_found', message: 'workspace not found', param: 'workspace_id' },
    });
    expect((await call('GET', '/api/audit-tokens?workspace_id=ws_nope', ADMIN)).status).toBe(404);
    const extra = await call('POST', '/api/audit-tokens', ADMIN, {
      workspace_id: wsA,
      name: 'x',
      scopes: ['all'],
    });
    expect(extra).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    const badName = await call('POST', '/api/audit-tokens', ADMIN, { workspace_id: wsA, name: '  ' });
    expect(badName).toMatchObject({ status: 400, body: { error: 'bad_request', param: 'name' } });
    expect((await call('GET', '/api/audit-tokens', null)).status).toBe(401);
    expect((await call('DELETE', '/api/audit-tokens/aut_x', 'svc_audit_not-a-session')).status).toBe(401);
  });
});

describe('who may mint, list and revoke', () => {
  it('a manager of A creates, lists and revokes; the revoked secret then verifies to null', async () => {
    const t = await mint(sessions.managerA, wsA, 'manager token');
    const list = await call('GET', `/api/audit-tokens?workspace_id=${wsA}`, sessions.managerA);
    expect((list.body.data as { id: string }[]).map((r) => r.id)).toContain(t.id);
    const own = await call('GET', '/api/audit-tokens', sessions.managerA);
    expect((own.body.data as { workspace_id: string }[]).every((r) => r.workspace_id === wsA)).toBe(true);

    const revoked = await call('DELETE', `/api/audit-tokens/${t.id}`, sessions.managerA);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: t.id, workspace_id: wsA, revoked_at: expect.any(String) });
    expect(revoked.raw).not.toContain(t.secret);
    expect(await cp.reads.verifyAuditToken(t.secret)).toBeNull();

    const again = await call('DELETE', `/api/audit-tokens/${t.id}`, sessions.managerA);
    expect(again).toMatchObject({
      status: 404,
      body: { error: 'not_found', message: 'audit token not found' },
    });
    const unknown = await call('DELETE', '/api/audit-tokens/aut_unknown', ADMIN);
    expect(unknown).toMatchObject({
      status: 404,
      body: { error: 'not_found', message: 'audit token not found' },
    });
  });

  it('a member of A who is not a manager gets 403 on create, list and revoke', async () => {
    const t = await mint(ADMIN, wsA, 'not for members');
    const answers = [
      await call('POST', '/api/audit-tokens', sessions.memberA, { workspace_id: wsA, name: 'mine' }),
      await call('GET', `/api/audit-tokens?workspace_id=${wsA}`, sessions.memberA),
      await call('DELETE', `/api/audit-tokens/${t.id}`, sessions.memberA),
    ];
    for (const a of answers)
      expect(a).toMatchObject({
        status: 403,
        body: { error: 'forbidden', message: 'a workspace manager role is required' },
      });
    // Without a workspace a member's listing is empty: only managers see a workspace's tokens.
    expect((await call('GET', '/api/audit-tokens', sessions.memberA)).body).toEqual({ data: [] });
    expect(await cp.reads.verifyAuditToken(t.secret)).not.toBeNull();
  });

  it("a manager of B cannot create, list or revoke A's tokens, and learns nothing of them", async () => {
    const t = await mint(ADMIN, wsA, 'secret project name');
    const own = await mint(sessions.managerB, wsB, 'b token');
    const answers = [
      await call('POST', '/api/audit-tokens', sessions.managerB, { workspace_id: wsA, name: 'into A' }),
      await call('GET', `/api/audit-tokens?workspace_id=${wsA}`, sessions.managerB),
      await call('DELETE', `/api/audit-tokens/${t.id}`, sessions.managerB),
    ];
    for (const a of answers) {
      expect(a).toMatchObject({
        status: 403,
        body: { error: 'forbidden', message: 'this workspace is outside your scope' },
      });
      expect(a.raw).not.toContain('secret project name');
      expect(a.raw).not.toContain(t.prefix);
    }
    const list = await call('GET', '/api/audit-tokens', sessions.managerB);
    expect((list.body.data as { id: string }[]).map((r) => r.id)).toEqual([own.id]);
    expect(await cp.reads.verifyAuditToken(t.secret)).toMatchObject({ workspace_id: wsA });
  });
});

describe('verifyAuditToken refuses every other secret', () => {
  it('an API key, a developer token, a session token, an unknown or malformed string: null', async () => {
    const { org_id } = await cp.createOrganization(cli, wsA, 'Audit org');
    const { project_id } = await cp.createProject(cli, org_id, 'Audit project');
    const apiKey = (await cp.createApiKey(cli, project_id, 'gateway key')).api_key;
    const auth = makeAuth(store, db.pool, Buffer.alloc(32, 9));
    const manager = await cp.reads.userByEmail('manager-a@audit.test');
    const developerToken = (
      await auth.developerTokens.create(
        { user_id: manager!.user_id, memberships: new Map([[wsA, 'manager']]) },
        { org_id, name: 'dev' },
      )
    ).token;
    expect(await auth.reads.verifyDeveloperToken(developerToken)).not.toBeNull();
    const live = (await mint(ADMIN, wsA, 'live')).secret;
    for (const secret of [
      apiKey,
      developerToken,
      sessions.managerA,
      ADMIN,
      '',
      'svc_audit_',
      `svc_audit_${'A'.repeat(43)}`,
      `${live} `,
      live.slice(0, -1),
      live.toUpperCase(),
      `svc_sk_${live.slice('svc_audit_'.length)}`,
    ]) {
      expect(await cp.reads.verifyAuditToken(secret), secret).toBeNull();
    }
    expect(await cp.reads.verifyAuditToken(live)).not.toBeNull();
  });
});

describe('audit trail (SPEC 6)', () => {
  it('the relay publishes audit_token.created and audit_token.revoked on svc.audit.events.<A>, without the hash', async () => {
    const t = await mint(sessions.managerA, wsA, 'audited');
    expect((await call('DELETE', `/api/audit-tokens/${t.id}`, ADMIN)).status).toBe(200);

    const bus = new PostgresBus(db.pool, { connectionString: db.url, pollMs: 50 });
    await bus.ensureStreams();
    const records: { record: Record<string, unknown>; raw: string }[] = [];
    const consumer = await bus.consume(
      'audit-token-test-reader',
      `svc.audit.events.${wsA}`,
      async (m) => {
        const raw = Buffer.from(m.data).toString('utf8');
        records.push({ record: JSON.parse(raw) as Record<string, unknown>, raw });
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    try {
      await rebuildProjection(db.pool, auditRelay(bus));
      const ofToken = () => records.filter((r) => (r.record.target as { id: string }).id === t.id);
      const deadline = Date.now() + 10_000;
      while (ofToken().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(ofToken().map((r) => r.record)).toEqual([
        expect.objectContaining({
          tenant_id: wsA,
          source: 'control-plane',
          actor: expect.stringMatching(/^user:/),
          action: 'audit_token.created',
          target: { type: 'audit_token', id: t.id },
        }),
        expect.objectContaining({
          tenant_id: wsA,
          actor: 'admin',
          action: 'audit_token.revoked',
          target: { type: 'audit_token', id: t.id },
        }),
      ]);
      const all = records.map((r) => r.raw).join('\n');
      expect(all).not.toContain(hashSecret(t.secret));
      expect(all).not.toContain(t.secret);
      expect(all).not.toMatch(/secret_hash/);
    } finally {
      await consumer.close();
      await bus.close();
    }
  }, 30_000);
});
