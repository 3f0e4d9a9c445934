import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call } from '../helpers/outside.js';

// count_tokens on /alt once proxied to the messages-style upstream with the operator's platform
// key for a tenant that has neither a wallet nor a key of its own: the operator's credential
// counted, for free, for anyone. Guarantee (SPEC 4.2 rule 9, 5 "Outbound, messages-style upstream:
// tenant BYOK credentials"): count_tokens asks the upstream only with the tenant's own connection;
// a tenant without one gets the estimate of rule 9 (ceil(body bytes / 4)), nothing upstream, so a
// client such as Claude Code keeps working.

const PLATFORM_KEY = 'sk-ant-platform-operator';
const TENANT_KEY = 'sk-ant-tenant-own';

let fake: FakeAnthropic;
let gw: GatewayEnv;
let byokApiKey: string;

const countTokens = (apiKey: string) =>
  call(gw.serve.httpUrl, 'POST', '/alt/v1/messages/count_tokens', {
    token: apiKey,
    apiKeyHeader: true,
    body: { model: 'claude-x', messages: [{ role: 'user', content: 'count me' }] },
  });

beforeAll(async () => {
  fake = await startFakeAnthropic();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'fatal', SVC_GATEWAY_RETRIES: '0' });
  await gw.svc([
    'registry',
    'upsert',
    '--adapter',
    'anthropic',
    '--model',
    'claude-x',
    '--provider-model-id',
    'claude-x-upstream',
    '--base-url',
    fake.url,
    '--max-output-tokens',
    '8192',
    '--input-price-per-token',
    '0.000003',
    '--output-price-per-token',
    '0.000015',
  ]);
  await gw.svc(['keys', 'platform', 'set', '--provider', 'anthropic', '--secret', PLATFORM_KEY]);
  const byok = await gw.svc(['bootstrap', '--workspace', 'Own', '--org', 'Own Org', '--project', 'Own']);
  byokApiKey = byok.api_key as string;
  await connect(gw, { provider: 'anthropic', secret: TENANT_KEY, projectId: byok.project_id as string });
  // Snapshots loaded: the tenant with its own key is counted upstream.
  await eventually(async () => (await countTokens(byokApiKey)).status === 200, 30_000, 'gateway snapshots');
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('count_tokens uses only the tenant own credentials (SPEC 4.2 rule 9)', () => {
  it('a tenant with neither wallet nor own key: the estimate, nothing upstream, the platform key never used', async () => {
    fake.reset();
    const r = await countTokens(gw.boot.api_key);
    const estimate = Math.ceil(
      Buffer.byteLength(
        JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content: 'count me' }] }),
      ) / 4,
    );
    expect({
      status: r.status,
      upstreamCalls: fake.requests.length,
      platformKeyUsed: fake.requests.some((q) => q.apiKey === PLATFORM_KEY),
    }).toEqual({ status: 200, upstreamCalls: 0, platformKeyUsed: false });
    expect(r.json).toEqual({ input_tokens: expect.any(Number) });
    // The estimate of the internal body: within a few tokens of the inbound body's bytes / 4.
    expect(Math.abs((r.json as { input_tokens: number }).input_tokens - estimate)).toBeLessThan(40);
    expect(r.headers.get('x-svc-request-id')).toMatch(/^req_/);
  });

  it('a tenant with its own key is counted upstream with that key', async () => {
    fake.reset();
    const r = await countTokens(byokApiKey);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ input_tokens: expect.any(Number) });
    expect(fake.requests.map((q) => [q.path, q.apiKey])).toEqual([['/v1/messages/count_tokens', TENANT_KEY]]);
  });
});
