import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 1.9 policies set through the control plane (routes and `svc policy`), enforced by the
// gateway of a running `svc serve`: a denial is policy_denied in each dialect's envelope with the
// request id, makes no upstream call, is recorded, and emits a policy.denied audit event; the
// change itself is audited. Real SDK clients on both edges.

let fake: FakeOpenAI;
let gw: GatewayEnv;
let key: { api_key_id: string; api_key: string };

type Json = Record<string, unknown>;
const api = async (method: string, path: string, body?: unknown, token = gw.admin, headers: Json = {}) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(headers as Record<string, string>),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {}, headers: res.headers };
};

const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
const anthropic = (apiKey: string) =>
  new Anthropic({ apiKey, baseURL: `${gw.serve.httpUrl}/alt`, maxRetries: 0 });

const failure = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    const r = await call();
    if (r && typeof r === 'object' && Symbol.asyncIterator in r)
      for await (const _ of r as AsyncIterable<unknown>);
    return null;
  } catch (err) {
    return err;
  }
};

const setPolicy = async (path: string, document: Json) => {
  const r = await api('PUT', path, { schema_version: 1, ...document });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r;
};

/** The gateway's snapshot follows the read model within a second; wait until a probe says so. */
const until = (what: string, probe: () => Promise<boolean>) => eventually(probe, 15_000, what);

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
  await addOpenAiEndpoint(gw, fake.url, { model: 'gpt-4o-mini', lane: 'openai-eu', connection: false });
  await addOpenAiEndpoint(gw, fake.url, { model: 'text-embedding-3-small', connection: false });
  key = (await gw.svc([
    'keys',
    'create',
    '--project',
    gw.boot.project_id,
    '--name',
    'governed',
  ])) as typeof key;
  await until('the registry snapshot', async () => {
    const r = await fetch(`${gw.serve.httpUrl}/v1/models`, {
      headers: { authorization: `Bearer ${key.api_key}` },
    });
    return ((await r.json()) as { data: unknown[] }).data.length >= 3;
  });
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('policies', () => {
  it('a denied model is policy_denied on /v1 (buffered and streamed) and on /alt, with no upstream call, recorded and audited', async () => {
    await setPolicy(`/api/api-keys/${key.api_key_id}/policy`, { models: { deny: ['gpt-4o'] } });
    const ask = (stream = false) =>
      openai(key.api_key).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hello' }],
        ...(stream ? { stream: true as const } : {}),
      });
    await until('the policy in force', async () => (await failure(() => ask())) !== null);
    const calls = fake.requests.length;

    const primary = (await failure(() => ask())) as InstanceType<typeof OpenAI.APIError>;
    expect(primary).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(primary.status).toBe(403);
    expect(primary.code).toBe('policy_denied');
    expect(primary.type).toBe('permission_error');
    expect(primary.message).toMatch(/denied by policy \(model_not_allowed\)/);
    expect(primary.message).toMatch(
      new RegExp(`workspace policy of API key ${key.api_key_id} denies "gpt-4o"`),
    );
    const requestId = primary.headers?.get('x-svc-request-id');
    expect(requestId).toMatch(/^req_/);
    const streamed = (await failure(() => ask(true))) as InstanceType<typeof OpenAI.APIError>;
    expect(streamed.status).toBe(403);
    expect(streamed.code).toBe('policy_denied');

    const alt = (await failure(() =>
      anthropic(key.api_key).messages.create({
        model: 'gpt-4o',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    )) as InstanceType<typeof Anthropic.APIError>;
    expect(alt).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(alt.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect((alt.error as { error: { message: string } }).error.message).toMatch(/model_not_allowed/);
    expect(alt.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    expect(fake.requests.length).toBe(calls);

    // Another model the policy allows is served for the same key; another key is not governed.
    await openai(key.api_key).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    await openai(gw.boot.api_key).chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(fake.requests.length).toBe(calls + 2);

    // Recorded: the request log has the denial with its code and status.
    await eventually(
      async () => {
        const page = await api('GET', `/api/requests?org_id=${gw.boot.org_id}&status_code=403&limit=50`);
        const rows = (page.body.data ?? []) as { request_id: string; error_code: string }[];
        return rows.some((r) => r.request_id === requestId && r.error_code === 'policy_denied');
      },
      30_000,
      'the denial in the request log',
    );

    // Audited: a policy.denied event naming the decision and the policy version, and the change.
    const token = await api('POST', '/api/audit-tokens', {
      workspace_id: gw.boot.workspace_id,
      name: 'auditor',
    });
    expect(token.status).toBe(201);
    const secret = (token.body as { secret: string }).secret;
    let denied: Json = {};
    await eventually(
      async () => {
        const r = await api(
          'GET',
          `/api/audit/events/${encodeURIComponent(`policy_denied:${requestId}`)}`,
          undefined,
          secret,
        );
        denied = r.body;
        return r.status === 200;
      },
      30_000,
      'the policy.denied audit event',
    );
    const event = JSON.parse(
      typeof denied.event === 'string' ? denied.event : JSON.stringify(denied.event ?? denied),
    ) as Json;
    expect(JSON.stringify(denied)).toContain('policy.denied');
    expect(JSON.stringify(denied)).toContain(`workspace:api_key:${key.api_key_id}@1`);
    expect(JSON.stringify(denied)).toContain('model_not_allowed');
    expect(event).toBeTruthy();
    const events = await api('GET', '/api/audit/events?limit=1000', undefined, secret);
    const actions = JSON.stringify(events.body);
    expect(actions).toContain('policy.set');

    await api('DELETE', `/api/api-keys/${key.api_key_id}/policy`);
  });

  it('a route deny list refuses embeddings; a max_tokens ceiling refuses above and caps a request that states none', async () => {
    await setPolicy(`/api/projects/${gw.boot.project_id}/policy`, {
      routes: { deny: ['/v1/embeddings'] },
      max_tokens: 64,
    });
    const embed = () =>
      openai(key.api_key).embeddings.create({ model: 'text-embedding-3-small', input: 'x' });
    // No embeddings endpoint is registered: 400 no_compatible_candidate until the policy is in force,
    // whose route denial then answers first.
    await until(
      'the project policy',
      async () => ((await failure(embed)) as { status?: number } | null)?.status === 403,
    );
    const calls = fake.requests.length;
    const refused = (await failure(embed)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.status).toBe(403);
    expect(refused.message).toMatch(/route_not_allowed/);

    const over = (await failure(() =>
      openai(key.api_key).chat.completions.create({
        model: 'gpt-4o',
        max_tokens: 65,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    )) as InstanceType<typeof OpenAI.APIError>;
    expect(over.status).toBe(403);
    expect(over.message).toMatch(/max_tokens 65 is above the ceiling of 64/);
    expect(fake.requests.length).toBe(calls);

    await openai(key.api_key).chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const sent = fake.requests.at(-1)!.body as Json;
    expect(sent.max_completion_tokens).toBe(64);
    expect(sent.max_tokens).toBeUndefined();
    await openai(key.api_key).chat.completions.create({
      model: 'gpt-4o',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect((fake.requests.at(-1)!.body as Json).max_tokens).toBe(10);
    await api('DELETE', `/api/projects/${gw.boot.project_id}/policy`);
  });

  it('payload capture denied by policy keeps bodies out even when tracing is asked for', async () => {
    // The ceiling is the probe that tells the policy is in force in the gateway's snapshot.
    await setPolicy(`/api/orgs/${gw.boot.org_id}/policy`, { payload_capture: false, max_tokens: 100_000 });
    await until('the org policy', async () => {
      const err = await failure(() =>
        openai(key.api_key).chat.completions.create({
          model: 'gpt-4o',
          max_tokens: 100_001,
          messages: [{ role: 'user', content: 'probe' }],
        }),
      );
      return (err as { status?: number } | null)?.status === 403;
    });
    const { response } = await openai(key.api_key)
      .chat.completions.create(
        { model: 'gpt-4o', messages: [{ role: 'user', content: 'secret' }] },
        { headers: { 'svc-enable-tracing': '1' } },
      )
      .withResponse();
    const requestId = response.headers.get('x-svc-request-id');
    let row: Json | undefined;
    await eventually(
      async () => {
        const page = await api('GET', `/api/requests?org_id=${gw.boot.org_id}&limit=100`);
        row = ((page.body.data ?? []) as Json[]).find((r) => r.request_id === requestId);
        return row !== undefined;
      },
      30_000,
      'the traced request in the log',
    );
    // (The query API answers these two flags as 0 and 1.)
    expect(row?.full_tracing).toBe(false);
    expect(Boolean(row?.has_request_body)).toBe(false);
    expect(Boolean(row?.has_response_body)).toBe(false);
    // The control: without the policy the same header captures the bodies.
    await api('DELETE', `/api/orgs/${gw.boot.org_id}/policy`);
    await until('the org policy cleared', async () => {
      const { response: r } = await openai(key.api_key)
        .chat.completions.create(
          { model: 'gpt-4o', messages: [{ role: 'user', content: 'open' }] },
          { headers: { 'svc-enable-tracing': '1' } },
        )
        .withResponse();
      const id = r.headers.get('x-svc-request-id');
      let found: Json | undefined;
      await eventually(
        async () => {
          const page = await api('GET', `/api/requests?org_id=${gw.boot.org_id}&limit=100`);
          found = ((page.body.data ?? []) as Json[]).find((x) => x.request_id === id);
          return found !== undefined;
        },
        30_000,
        'the request in the log',
      );
      return Boolean(found?.has_request_body);
    });
  });

  it('routes: validation names the field, If-Match guards concurrent changes, members read and managers change, history is append-only', async () => {
    const path = `/api/projects/${gw.boot.project_id}/policy`;
    const typo = await api('PUT', path, { schema_version: 1, max_token: 5 });
    expect(typo.status).toBe(400);
    expect((typo.body.error as Json | undefined)?.message ?? typo.body.message).toMatch(
      /unknown field max_token/,
    );
    const version = await api('PUT', path, { schema_version: 2 });
    expect(version.status).toBe(400);

    const first = await setPolicy(path, { max_tokens: 100 });
    const revision = Number((first.body as { revision: number }).revision);
    expect(first.headers.get('etag')).toBe(`"${revision}"`);
    const stale = await api('PUT', path, { schema_version: 1, max_tokens: 200 }, gw.admin, {
      'if-match': `"${revision - 1}"`,
    });
    expect(stale.status).toBe(412);
    const weak = await api('PUT', path, { schema_version: 1, max_tokens: 200 }, gw.admin, {
      'if-match': `W/"${revision}"`,
    });
    expect(weak.status).toBe(412);
    const garbled = await api('PUT', path, { schema_version: 1, max_tokens: 200 }, gw.admin, {
      'if-match': `"${revision}`,
    });
    expect(garbled.status).toBe(400);
    const fresh = await api('PUT', path, { schema_version: 1, max_tokens: 200 }, gw.admin, {
      'if-match': `"${revision}"`,
    });
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({
      revision: revision + 1,
      document: { schema_version: 1, max_tokens: 200 },
    });

    await gw.svc([
      'users',
      'add',
      '--email',
      'policy-member@example.com',
      '--workspace',
      gw.boot.workspace_id,
    ]);
    const session = (await gw.svc(['sessions', 'issue', '--email', 'policy-member@example.com'])) as {
      token: string;
    };
    expect((await api('GET', path, undefined, session.token)).status).toBe(200);
    expect((await api('PUT', path, { schema_version: 1 }, session.token)).status).toBe(403);
    expect((await api('DELETE', path, undefined, session.token)).status).toBe(403);

    // Another workspace's manager sees none of it.
    const other = (await gw.svc([
      'bootstrap',
      '--workspace',
      'Other',
      '--org',
      'Other Org',
      '--project',
      'Other P',
    ])) as {
      workspace_id: string;
    };
    await gw.svc([
      'users',
      'add',
      '--email',
      'other-mgr@example.com',
      '--workspace',
      other.workspace_id,
      '--role',
      'manager',
    ]);
    const otherSession = (await gw.svc(['sessions', 'issue', '--email', 'other-mgr@example.com'])) as {
      token: string;
    };
    expect((await api('GET', path, undefined, otherSession.token)).status).toBe(403);
    expect((await api('PUT', path, { schema_version: 1 }, otherSession.token)).status).toBe(403);
    const listed = await api('GET', '/api/policies', undefined, otherSession.token);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);

    const history = await api('GET', `${path}/history`);
    const changes = (history.body.data as { revision: number; change: string }[]).map((h) => h.change);
    expect(changes.slice(-2)).toEqual(['set', 'set']);
    expect((await api('DELETE', path, undefined, gw.admin, { 'if-match': '*' })).status).toBe(204);
    expect((await api('GET', path)).status).toBe(404);
    expect((await api('DELETE', path)).status).toBe(404);
    expect((await api('PUT', path, { schema_version: 1 }, gw.admin, { 'if-match': '*' })).status).toBe(412);
  });

  it("the operator's policy binds the workspace: managers read it, cannot change or lift it", async () => {
    await gw.svc([
      'users',
      'add',
      '--email',
      'policy-manager@example.com',
      '--workspace',
      gw.boot.workspace_id,
      '--role',
      'manager',
    ]);
    const manager = (
      (await gw.svc(['sessions', 'issue', '--email', 'policy-manager@example.com'])) as { token: string }
    ).token;
    const orgPath = `/api/orgs/${gw.boot.org_id}/policy`;
    const set = await api('PUT', `${orgPath}?layer=operator`, {
      schema_version: 1,
      models: { deny: ['gpt-4o'] },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ layer: 'operator', scope: 'org' });
    // The manager reads it, and may not change or clear it.
    expect((await api('GET', `${orgPath}?layer=operator`, undefined, manager)).status).toBe(200);
    expect((await api('PUT', `${orgPath}?layer=operator`, { schema_version: 1 }, manager)).status).toBe(403);
    expect((await api('DELETE', `${orgPath}?layer=operator`, undefined, manager)).status).toBe(403);
    expect((await api('GET', `${orgPath}?layer=tenant`)).status).toBe(400);
    // A misspelled or repeated layer is refused, never read as the workspace's.
    for (const q of ['?Layer=operator', '?layer[]=operator', '?layer=operator&layer=workspace'])
      expect((await api('PUT', `${orgPath}${q}`, { schema_version: 1 })).status, q).toBe(400);
    // A workspace policy that lifts the model rule on the key does not lift the operator's.
    const lift = await api(
      'PUT',
      `/api/api-keys/${key.api_key_id}/policy`,
      { schema_version: 1, models: null },
      manager,
    );
    expect(lift.status).toBe(200);
    const ask = () =>
      openai(key.api_key).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'x' }],
      });
    await until(
      'the operator policy',
      async () => ((await failure(ask)) as { status?: number } | null)?.status === 403,
    );
    const refused = (await failure(ask)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.message).toMatch(/operator policy of org/);
    const history = await api('GET', `${orgPath}/history`);
    expect((history.body.data as { layer: string }[]).some((h) => h.layer === 'operator')).toBe(true);
    const operatorOnly = await api('GET', `${orgPath}/history?layer=operator`);
    expect((operatorOnly.body.data as { layer: string }[]).every((h) => h.layer === 'operator')).toBe(true);
    expect((await api('DELETE', `${orgPath}?layer=operator`)).status).toBe(204);
    expect((await api('DELETE', `/api/api-keys/${key.api_key_id}/policy`, undefined, manager)).status).toBe(
      204,
    );
    await until('served again', async () => (await failure(ask)) === null);
  });

  it('svc policy set, show, history, list and clear, with --json', async () => {
    const org = gw.boot.org_id;
    const set = (await gw.svc([
      'policy',
      'set',
      '--org',
      org,
      '--document',
      JSON.stringify({ schema_version: 1, providers: { deny: ['openai-eu'] } }),
    ])) as Json;
    expect(set).toMatchObject({
      scope: 'org',
      target_id: org,
      document: { providers: { deny: ['openai-eu'] } },
    });
    const shown = (await gw.svc(['policy', 'show', '--org', org])) as Json;
    expect(shown.revision).toBe(set.revision);
    const listed = (await gw.svc(['policy', 'list', '--org', org])) as { data: Json[] };
    expect(listed.data.map((p) => p.scope)).toEqual(['org']);
    const history = (await gw.svc(['policy', 'history', '--org', org])) as { data: Json[] };
    expect(history.data.at(-1)).toMatchObject({ change: 'set', by: 'cli' });
    const refused = await failure(() =>
      gw.svc(['policy', 'set', '--org', org, '--document', '{"schema_version":1,"x":1}']),
    );
    expect(String(refused)).toMatch(/unknown field x/);
    const cleared = (await gw.svc(['policy', 'clear', '--org', org])) as Json;
    expect(cleared).toMatchObject({ cleared: true });
  });
});
