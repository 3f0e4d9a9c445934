import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { grpcClient } from '../helpers/grpc.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// SPEC 1.9, 4.8, 7.4 across processes on one PostgreSQL: the same denial in process (the all-roles
// `svc serve`) and across gRPC (a gateway with POLICY_GRPC_ENDPOINT set, a `--roles policy`
// process answering); with that policy process down the gateways follow SVC_POLICY_FAIL_MODE; and a
// policy rate limit of N a minute on a key holds at N in total across two gateway processes.

let fake: FakeOpenAI;
let gw: GatewayEnv;
let policyRole: ServeProcess | undefined;
let closedGateway: ServeProcess;
let openGateway: ServeProcess;
const dirs: string[] = [];

const startRole = async (extra: Record<string, string>, args: string[]) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-policy-'));
  await chmod(dir, 0o755);
  dirs.push(dir);
  return startServe({ ...gw.env, SVC_DATA_DIR: dir, ...extra }, args);
};

type ApiError = InstanceType<typeof OpenAI.APIError>;
const chat = (url: string, apiKey: string, maxTokens?: number) =>
  new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 }).chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hello' }],
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  });
const outcome = async (call: () => Promise<unknown>): Promise<ApiError | null> => {
  try {
    await call();
    return null;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
};
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${gw.serve.httpUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
};
const newKey = async (name: string) =>
  (await gw.svc(['keys', 'create', '--project', gw.boot.project_id, '--name', name])) as {
    api_key_id: string;
    api_key: string;
  };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
  policyRole = await startRole({}, ['--roles', 'policy']);
  const endpoint = `127.0.0.1:${policyRole.grpcPort}`;
  const remote = {
    POLICY_GRPC_ENDPOINT: endpoint,
    SVC_POLICY_CACHE_MS: '200',
    SVC_POLICY_DEADLINE_MS: '500',
  };
  closedGateway = await startRole({ ...remote, SVC_POLICY_FAIL_MODE: 'closed' }, ['--roles', 'gateway']);
  openGateway = await startRole({ ...remote, SVC_POLICY_FAIL_MODE: 'open' }, ['--roles', 'gateway']);
  for (const url of [gw.serve.httpUrl, closedGateway.httpUrl, openGateway.httpUrl])
    await eventually(
      async () => (await outcome(() => chat(url, gw.boot.api_key))) === null,
      20_000,
      `${url} serving`,
    );
}, 180_000);
afterAll(async () => {
  await Promise.allSettled([policyRole?.stop(), closedGateway?.stop(), openGateway?.stop()]);
  await gw?.stop();
  await fake?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('policy across processes', () => {
  it('gives the same denial in process and across gRPC', async () => {
    const key = await newKey('denied');
    await api('PUT', `/api/api-keys/${key.api_key_id}/policy`, {
      schema_version: 1,
      providers: { deny: ['openai'] },
    });
    const urls = [gw.serve.httpUrl, closedGateway.httpUrl, openGateway.httpUrl];
    for (const url of urls)
      await eventually(
        async () => (await outcome(() => chat(url, key.api_key)))?.status === 403,
        15_000,
        `${url} denies`,
      );
    const calls = fake.requests.length;
    const answers = await Promise.all(urls.map((url) => outcome(() => chat(url, key.api_key))));
    const shapes = answers.map((e) => ({
      status: e?.status,
      code: e?.code,
      type: e?.type,
      message: e?.message,
    }));
    expect(shapes[0]).toMatchObject({ status: 403, code: 'policy_denied', type: 'permission_error' });
    expect(shapes[0]?.message).toMatch(/provider_not_allowed/);
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
    for (const e of answers) expect(e?.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    expect(fake.requests.length).toBe(calls);

    // A grpc-js client of the policy role: with the service token it gets the decision, without UNAUTHENTICATED.
    const ask = {
      org_id: gw.boot.org_id,
      project_id: gw.boot.project_id,
      api_key_id: key.api_key_id,
      route: '/v1/chat/completions',
      model: 'gpt-4o',
      candidates: [{ provider: 'openai', adapter: 'openai', model: 'gpt-4o', provider_model_id: 'gpt-4o' }],
    };
    const client = grpcClient(
      policyRole!.grpcPort,
      'svc/policy/v1/policy.proto',
      'svc.policy.v1.PolicyService',
      gw.admin,
    );
    const decision = await client.call<{ allowed: boolean; code: string; policy_version: string }>(
      'Evaluate',
      ask,
    );
    client.close();
    expect(decision).toMatchObject({ allowed: false, code: 'provider_not_allowed' });
    expect(decision.policy_version).toBe(`workspace:api_key:${key.api_key_id}@1`);
    const anonymous = grpcClient(
      policyRole!.grpcPort,
      'svc/policy/v1/policy.proto',
      'svc.policy.v1.PolicyService',
    );
    const refused = (await anonymous.call('Evaluate', ask).catch((e: unknown) => e)) as { code: number };
    anonymous.close();
    expect(refused.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it('holds a rate limit of N a minute at N in total across two gateway processes', async () => {
    const key = await newKey('limited');
    const N = 12;
    // The ceiling is a probe that tells the policy is in force without spending the limit.
    await api('PUT', `/api/api-keys/${key.api_key_id}/policy`, {
      schema_version: 1,
      max_tokens: 1_000,
      rate_limits: { requests_per_minute: N },
    });
    for (const url of [gw.serve.httpUrl, closedGateway.httpUrl])
      await eventually(
        async () => (await outcome(() => chat(url, key.api_key, 1_001)))?.status === 403,
        15_000,
        `${url} has the policy`,
      );
    const calls = fake.requests.length;
    const attempts = Array.from({ length: 4 * N }, (_, i) =>
      i % 2 === 0 ? gw.serve.httpUrl : closedGateway.httpUrl,
    );
    const results: (ApiError | null)[] = [];
    // Eight at a time, alternating processes, as two replicas behind a balancer would see them.
    for (let i = 0; i < attempts.length; i += 8)
      results.push(
        ...(await Promise.all(attempts.slice(i, i + 8).map((url) => outcome(() => chat(url, key.api_key))))),
      );
    const served = results.filter((r) => r === null).length;
    expect(served).toBe(N);
    expect(fake.requests.length - calls).toBe(N);
    const refused = results.filter((r): r is ApiError => r !== null);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.code).toBe('rate_limit_error');
      expect(r.message).toMatch(/rate limit of 12 requests per minute/);
      expect(Number(r.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    }
    // Both processes served some of the N: the limit is shared, not per process.
    const servedBy = (url: string) => attempts.filter((u, i) => u === url && results[i] === null).length;
    expect(servedBy(gw.serve.httpUrl)).toBeGreaterThan(0);
    expect(servedBy(closedGateway.httpUrl)).toBeGreaterThan(0);
  });

  it('with the policy process down, fail-closed answers 503 and fail-open serves', async () => {
    await policyRole?.stop();
    policyRole = undefined;
    await eventually(
      async () => (await outcome(() => chat(closedGateway.httpUrl, gw.boot.api_key)))?.status === 503,
      15_000,
      'fail-closed refusing',
    );
    const closed = await outcome(() => chat(closedGateway.httpUrl, gw.boot.api_key));
    expect(closed?.status).toBe(503);
    expect(closed?.message).toMatch(/policy service did not answer/);
    expect(closed?.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    expect(await outcome(() => chat(openGateway.httpUrl, gw.boot.api_key))).toBeNull();
    // The in-process gateway has no policy service to lose.
    expect(await outcome(() => chat(gw.serve.httpUrl, gw.boot.api_key))).toBeNull();
  });
});
