import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 7.4: per-API-key gateway rate limits answer 429 with Retry-After in whole
// seconds (at least 1), after the request id was assigned, and make no upstream call.

let fake: FakeOpenAI;
let gw: GatewayEnv;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // 6 a minute: a burst of one, then one every ten seconds.
  gw = await startGatewayEnv({ SVC_GATEWAY_RATE_LIMIT_RPM: '6' });
  await addOpenAiEndpoint(gw, fake.url);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('gateway rate limit', () => {
  it('the request over the limit gets 429 rate_limit_error with Retry-After and the request id', async () => {
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    // The first request may meet cold snapshots (unknown model): it still spends the burst.
    await eventually(
      async () => {
        const r = await fetch(`${gw.serve.httpUrl}/v1/models`, {
          headers: { authorization: `Bearer ${gw.boot.api_key}` },
        });
        return ((await r.json()) as { data: unknown[] }).data.length > 0;
      },
      5_000,
      'registry snapshot',
    );
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'one' }] });
    const upstreamBefore = fake.requests.length;
    const err = (await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'two' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.status).toBe(429);
    const retryAfter = Number(err.headers?.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    expect(err.headers?.get('x-svc-request-id')).toMatch(/^req_/);
    expect((err.error as { type: string; request_id: string }).type).toBe('rate_limit_error');
    expect(fake.requests.length).toBe(upstreamBefore);
  });
});
