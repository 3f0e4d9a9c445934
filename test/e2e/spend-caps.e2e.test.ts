import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Monthly spend caps set through the control plane (HTTP route and `svc
// spend-caps`), checked by the gateway of a running `svc serve` against the QueryService
// MonthlyUsageSnapshot of the same process. A key over its cap is refused in the caller's envelope
// on both edges, the fake upstream sees no call, and the refusals are recorded like other refusals.

let fake: FakeOpenAI;
let gw: GatewayEnv;
let capped: { api_key_id: string; api_key: string };

const api = async (method: string, path: string, body?: unknown, token = gw.admin) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
};

const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
const anthropic = (apiKey: string) =>
  new Anthropic({ apiKey, baseURL: `${gw.serve.httpUrl}/alt`, maxRetries: 0 });
const chat = (apiKey: string, stream = false) =>
  openai(apiKey).chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hello' }],
    ...(stream ? { stream: true as const } : {}),
  });

/** Resolves with the error a call throws, or null when it succeeds. */
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

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_GATEWAY_SPEND_CAP_REFRESH_MS: '200', SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
  capped = (await gw.svc(['keys', 'create', '--project', gw.boot.project_id, '--name', 'capped'])) as {
    api_key_id: string;
    api_key: string;
  };
  // The registry snapshot is warm once the model is listed.
  await eventually(
    async () => {
      const r = await fetch(`${gw.serve.httpUrl}/v1/models`, {
        headers: { authorization: `Bearer ${gw.boot.api_key}` },
      });
      return ((await r.json()) as { data: unknown[] }).data.length > 0;
    },
    10_000,
    'registry snapshot',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('spend caps', () => {
  it('a key over its monthly cap is refused on /v1 and /alt without an upstream call, and recorded', async () => {
    // Spend something on the key, then cap it below what it spent.
    await chat(capped.api_key);
    const set = await api('PUT', `/api/api-keys/${capped.api_key_id}/spend-cap`, {
      monthly_usd: '0.000000000000000001',
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({
      level: 'api_key',
      target_id: capped.api_key_id,
      monthly_usd: '0.000000000000000001',
    });
    // The spend reaches the snapshot through ingest; until then the key is still served.
    let first: unknown = null;
    const deadline = Date.now() + 30_000;
    while (!first && Date.now() < deadline) {
      first = await failure(() => chat(capped.api_key));
      if (!first) await new Promise((r) => setTimeout(r, 250));
    }
    expect(first).toBeInstanceOf(OpenAI.APIError);
    const upstreamCalls = fake.requests.length;

    const primary = (await failure(() => chat(capped.api_key))) as InstanceType<typeof OpenAI.APIError>;
    expect(primary).toBeInstanceOf(OpenAI.APIError);
    expect(primary.status).toBe(402);
    expect(primary.code).toBe('spend_cap_exceeded');
    expect(primary.type).toBe('insufficient_quota');
    expect(primary.message).toMatch(/monthly spend cap of this API key is reached/);
    expect(primary.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    const streamed = (await failure(() => chat(capped.api_key, true))) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(streamed.status).toBe(402);
    expect(streamed.code).toBe('spend_cap_exceeded');

    const alt = (await failure(() =>
      anthropic(capped.api_key).messages.create({
        model: 'gpt-4o',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    )) as InstanceType<typeof Anthropic.APIError>;
    expect(alt).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(alt.status).toBe(403);
    expect(alt.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect((alt.error as { error: { message: string } }).error.message).toMatch(/monthly spend cap/);
    expect(fake.requests.length).toBe(upstreamCalls);

    // Token counting spends nothing: a capped key may still count.
    const counted = await anthropic(capped.api_key).messages.countTokens({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);

    // Another key of the same project has no cap and is served.
    await chat(gw.boot.api_key);
    expect(fake.requests.length).toBe(upstreamCalls + 1);

    // Recorded like other refusals: the query API lists them with their code and status, the
    // primary ones as 402 and the alternate one as 403 (rows arrive as ingest flushes them).
    const refusals = async (status: number) => {
      const page = await api('GET', `/api/requests?org_id=${gw.boot.org_id}&status_code=${status}&limit=50`);
      const rows = (page.body.data ?? []) as { error_code: string }[];
      return rows.filter((r) => r.error_code === 'spend_cap_exceeded').length;
    };
    await eventually(
      async () => (await refusals(402)) >= 3 && (await refusals(403)) >= 1,
      30_000,
      'the refusals in the request log',
    );
  });

  it('svc spend-caps sets, shows and clears a project cap; members read, managers change', async () => {
    const project = gw.boot.project_id;
    const set = await gw.svc(['spend-caps', 'set', '--project', project, '--monthly-usd', '0']);
    expect(set).toMatchObject({ level: 'project', target_id: project, monthly_usd: '0' });
    // A cap of 0 is reached at once: the uncapped key of the project is refused too.
    await eventually(async () => (await failure(() => chat(gw.boot.api_key))) !== null, 10_000, 'the cap');
    const upstreamCalls = fake.requests.length;
    const refused = (await failure(() => chat(gw.boot.api_key))) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.status).toBe(402);
    expect(refused.message).toMatch(/of this project/);
    expect(fake.requests.length).toBe(upstreamCalls);

    const shown = (await gw.svc(['spend-caps', 'show', '--org', gw.boot.org_id])) as {
      data: { level: string; target_id: string; monthly_usd: string }[];
    };
    expect(shown.data.map((c) => [c.level, c.target_id, c.monthly_usd])).toEqual([
      ['project', project, '0'],
      ['api_key', capped.api_key_id, '0.000000000000000001'],
    ]);

    await gw.svc(['users', 'add', '--email', 'member@example.com', '--workspace', gw.boot.workspace_id]);
    const session = (await gw.svc(['sessions', 'issue', '--email', 'member@example.com'])) as {
      token: string;
    };
    const read = await api('GET', `/api/projects/${project}/spend-cap`, undefined, session.token);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      monthly_usd: '0',
      guidance: expect.stringMatching(/UTC calendar month/),
    });
    const change = await api(
      'PUT',
      `/api/projects/${project}/spend-cap`,
      { monthly_usd: '5' },
      session.token,
    );
    expect(change.status).toBe(403);
    const bad = await api('PUT', `/api/projects/${project}/spend-cap`, { monthly_usd: '-5' });
    expect(bad.status).toBe(400);
    expect(bad.body.param).toBe('monthly_usd');

    const cleared = await gw.svc(['spend-caps', 'clear', '--project', project]);
    expect(cleared).toMatchObject({ level: 'project', cleared: true });
    expect((await api('GET', `/api/projects/${project}/spend-cap`)).status).toBe(404);
    await eventually(
      async () => (await failure(() => chat(gw.boot.api_key))) === null,
      10_000,
      'served again',
    );
  });
});
