import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthReads } from '../../src/projections/auth/reads.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Every status code of SPEC 4.4 and 7.6 rule 4 for personal developer
// tokens through a running `svc serve`, their verification for the query role, and their refusal
// at the model edges.

let gw: GatewayEnv;
let ada: { token: string; user_id: string };
let bob: { token: string };
let expired: string;
let other: { org_id: string; project_id: string; api_key: string };
let created: Record<string, unknown>;
let scoped: Record<string, unknown>;

const api = async (method: string, path: string, token: string | null, body?: unknown) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
};

const session = async (email: string, ttl = '1h') =>
  (await gw.svc(['sessions', 'issue', '--email', email, '--ttl', ttl])).token as string;

beforeAll(async () => {
  gw = await startGatewayEnv();
  const ws = gw.boot.workspace_id;
  const added = await gw.svc([
    'users',
    'add',
    '--email',
    'ada@example.com',
    '--workspace',
    ws,
    '--role',
    'member',
  ]);
  await gw.svc(['users', 'add', '--email', 'bob@example.com', '--workspace', ws, '--role', 'manager']);
  ada = { token: await session('ada@example.com'), user_id: String(added.user_id) };
  bob = { token: await session('bob@example.com') };
  expired = await session('ada@example.com', '1s');
  other = (await gw.svc([
    'bootstrap',
    '--workspace',
    'Elsewhere',
    '--org',
    'Elsewhere Org',
    '--project',
    'Elsewhere Project',
  ])) as unknown as typeof other;
});
afterAll(async () => {
  await gw?.stop();
});

describe('developer tokens: a console session is required (401)', () => {
  it('a missing, malformed, unknown, expired or non-session credential is 401 with a message', async () => {
    await new Promise((r) => setTimeout(r, 1_100));
    const paths: [string, string, unknown?][] = [
      ['POST', '/api/auth/developer-tokens', { org_id: gw.boot.org_id, name: 'x' }],
      ['POST', '/api/auth/developer-tokens', {}],
      ['GET', `/api/auth/developer-tokens?org_id=${gw.boot.org_id}`],
      ['DELETE', '/api/auth/developer-tokens/dtk_whatever'],
    ];
    for (const credential of [null, 'svc_sess_not-a-session', expired, gw.admin, gw.boot.api_key]) {
      for (const [method, path, body] of paths) {
        const r = await api(method, path, credential, body);
        expect(r.status, `${method} ${path} with ${credential}`).toBe(401);
        expect(String(r.body.message).length).toBeGreaterThan(0);
      }
    }
    const basic = await fetch(`${gw.serve.httpUrl}/api/auth/developer-tokens?org_id=${gw.boot.org_id}`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${ada.token}`).toString('base64')}` },
    });
    expect(basic.status).toBe(401);
  });
});

describe('developer tokens: create (201, 400, 403)', () => {
  it('validation failures are 400 with a message naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /org_id/],
      [{ org_id: gw.boot.org_id }, /name/],
      [{ org_id: gw.boot.org_id, name: '' }, /name/],
      [{ org_id: gw.boot.org_id, name: 'x'.repeat(101) }, /name/],
      [{ org_id: gw.boot.org_id, name: 'ok', scope: 'all' }, /scope|unrecognized/i],
      [{ org_id: gw.boot.org_id, name: 'ok', project_id: other.project_id }, /project_id/],
      [{ org_id: gw.boot.org_id, name: 'ok', project_id: 'prj_unknown' }, /project_id/],
    ];
    for (const [body, message] of cases) {
      const r = await api('POST', '/api/auth/developer-tokens', ada.token, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(String(r.body.message)).toMatch(message);
    }
  });

  it("an org outside the caller's workspaces, known or not, is 403 with a message", async () => {
    for (const org_id of [other.org_id, 'org_unknown']) {
      const r = await api('POST', '/api/auth/developer-tokens', ada.token, { org_id, name: 'laptop' });
      expect(r.status).toBe(403);
      expect(String(r.body.message)).toMatch(/org_id/);
      const list = await api('GET', `/api/auth/developer-tokens?org_id=${org_id}`, ada.token);
      expect(list.status).toBe(403);
      expect(String(list.body.message).length).toBeGreaterThan(0);
    }
    const missing = await api('GET', '/api/auth/developer-tokens', ada.token);
    expect(missing.status).toBe(400);
    expect(String(missing.body.message)).toMatch(/org_id/);
  });

  it('201 answers the secret once, with its visible prefix, bound to the org and optional project', async () => {
    const r = await api('POST', '/api/auth/developer-tokens', ada.token, {
      org_id: gw.boot.org_id,
      name: 'laptop',
    });
    expect(r.status).toBe(201);
    created = r.body;
    expect(Object.keys(created).sort()).toEqual([
      'created_at',
      'id',
      'name',
      'org_id',
      'prefix',
      'project_id',
      'token',
    ]);
    expect(created).toMatchObject({ org_id: gw.boot.org_id, project_id: null, name: 'laptop' });
    expect(String(created.token)).toMatch(/^svc_dev_[A-Za-z0-9_-]{43}$/);
    expect(String(created.token).startsWith(String(created.prefix))).toBe(true);
    expect(String(created.prefix)).toHaveLength(12);

    const s = await api('POST', '/api/auth/developer-tokens', ada.token, {
      org_id: gw.boot.org_id,
      project_id: gw.boot.project_id,
      name: 'ci runner',
    });
    expect(s.status).toBe(201);
    scoped = s.body;
    expect(scoped.project_id).toBe(gw.boot.project_id);
  });
});

describe('developer tokens: listing, verification, revocation (200, 404)', () => {
  it("lists the caller's live tokens for the org, metadata only", async () => {
    const r = await api('GET', `/api/auth/developer-tokens?org_id=${gw.boot.org_id}`, ada.token);
    expect(r.status).toBe(200);
    const data = r.body.data as Record<string, unknown>[];
    expect(data.map((t) => t.id)).toEqual([created.id, scoped.id]);
    for (const t of data)
      expect(Object.keys(t).sort()).toEqual(['created_at', 'id', 'name', 'org_id', 'prefix', 'project_id']);
    expect(r.text).not.toContain(String(created.token));
    expect(r.text).not.toMatch(/[0-9a-f]{64}/);
    const bobs = await api('GET', `/api/auth/developer-tokens?org_id=${gw.boot.org_id}`, bob.token);
    expect(bobs.body.data).toEqual([]);
  });

  it('verifyDeveloperToken answers the scope of a live token and null otherwise', async () => {
    const reads = new AuthReads(gw.db.pool);
    expect(await reads.verifyDeveloperToken(String(created.token))).toEqual({
      user_id: ada.user_id,
      org_id: gw.boot.org_id,
      project_id: null,
    });
    expect(await reads.verifyDeveloperToken(String(scoped.token))).toMatchObject({
      project_id: gw.boot.project_id,
    });
    for (const token of ['svc_dev_unknown', gw.boot.api_key, ada.token])
      expect(await reads.verifyDeveloperToken(token)).toBeNull();
  });

  it('the model edges refuse a developer token with 401', async () => {
    const token = String(created.token);
    const chat = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(401);
    expect(chat.headers.get('x-svc-request-id')).toBeNull();
    expect(((await chat.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const credentials: Record<string, string>[] = [
      { 'x-api-key': token },
      { authorization: `Bearer ${token}` },
    ];
    for (const header of credentials) {
      const messages = await fetch(`${gw.serve.httpUrl}/alt/v1/messages`, {
        method: 'POST',
        headers: { ...header, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'claude-x',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(messages.status).toBe(401);
      expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    }
  });

  it("another user's, an unknown and an already revoked token are 404 with a message", async () => {
    const foreign = await api('DELETE', `/api/auth/developer-tokens/${created.id}`, bob.token);
    expect(foreign.status).toBe(404);
    expect(String(foreign.body.message)).toMatch(/not found/);
    const unknown = await api('DELETE', '/api/auth/developer-tokens/dtk_unknown', ada.token);
    expect(unknown.status).toBe(404);
    expect(String(unknown.body.message)).toMatch(/not found/);

    const revoked = await api('DELETE', `/api/auth/developer-tokens/${created.id}`, ada.token);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.id, revoked: true });
    const again = await api('DELETE', `/api/auth/developer-tokens/${created.id}`, ada.token);
    expect(again.status).toBe(404);
    expect(String(again.body.message)).toMatch(/already revoked/);

    expect(await new AuthReads(gw.db.pool).verifyDeveloperToken(String(created.token))).toBeNull();
    const list = await api('GET', `/api/auth/developer-tokens?org_id=${gw.boot.org_id}`, ada.token);
    expect((list.body.data as { id: string }[]).map((t) => t.id)).toEqual([scoped.id]);
  });

  it('creation and revocation are audit events of the workspace, without the secret or its hash', async () => {
    const read = async () =>
      (
        await gw.db.pool.query<{ subject: string; raw: string }>(
          `SELECT subject, convert_from(data, 'UTF8') AS raw FROM svc_bus_messages
           WHERE subject LIKE 'svc.audit.events.%' ORDER BY seq`,
        )
      ).rows.map((r) => ({
        ...r,
        record: JSON.parse(r.raw) as { action: string; actor: string; source: string },
      }));
    await eventually(
      async () => (await read()).some((r) => r.record.action === 'developer_token.revoked'),
      10_000,
      'developer_token.revoked audit event',
    );
    const records = (await read()).filter((r) => r.record.action.startsWith('developer_token.'));
    expect(records.map((r) => r.record.action)).toEqual([
      'developer_token.created',
      'developer_token.created',
      'developer_token.revoked',
    ]);
    for (const r of records) {
      expect(r.subject).toBe(`svc.audit.events.${gw.boot.workspace_id}`);
      expect(r.record).toMatchObject({ actor: `user:${ada.user_id}`, source: 'auth' });
      expect(r.raw).not.toContain(String(created.token));
      expect(r.raw).not.toMatch(/token_hash|[0-9a-f]{64}/);
    }
  });
});
