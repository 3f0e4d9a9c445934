import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually, type GatewayEnv, startGatewayEnv, upsertFakeEndpoint } from '../helpers/gateway-env.js';
import { call, sleep, walletOf } from '../helpers/outside.js';

// A strange output limit (`max_tokens` of 1e308, -1, 0.5 or 9007199254740993,
// on /v1 and /alt) placed no escrow hold, yet the request was served on the platform key: an
// unfunded workspace was served, and a burst against a tiny balance drove the wallet negative.
// Guarantee (SPEC 1.4, 8 "escrow hold", 4.2 rule 1): an output limit the gateway cannot read is
// refused with a 400 in the dialect's envelope before any upstream call, so funded traffic never
// reaches an upstream without a hold; with no limit the hold covers the model's registry ceiling.

const STRANGE = ['1e308', '-1', '0.5', '9007199254740993', '0', '1e400', '-0.0'];
const FUNDED_USD = '0.000842';
const OUTPUT_CEILING = 16_384;

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let gw: GatewayEnv;

interface Probe {
  route: string;
  path: string;
  field: string;
  /** A body text whose limit field holds the raw JSON number token `@`. */
  template: string;
  alt: boolean;
}

const PROBES: Probe[] = [
  {
    route: 'chat max_tokens',
    path: '/v1/chat/completions',
    field: 'max_tokens',
    template: '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":@}',
    alt: false,
  },
  {
    route: 'chat max_completion_tokens',
    path: '/v1/chat/completions',
    field: 'max_completion_tokens',
    template: '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":@}',
    alt: false,
  },
  {
    route: 'responses max_output_tokens',
    path: '/v1/responses',
    field: 'max_output_tokens',
    template: '{"model":"gpt-4o","input":"hi","max_output_tokens":@}',
    alt: false,
  },
  {
    route: 'alt messages max_tokens',
    path: '/alt/v1/messages',
    field: 'max_tokens',
    template: '{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"max_tokens":@}',
    alt: true,
  },
];

const send = (probe: Probe, value: string) =>
  call(gw.serve.httpUrl, 'POST', probe.path, {
    token: gw.boot.api_key,
    apiKeyHeader: probe.alt,
    body: probe.template.replace('@', value),
  });

const upstreamCalls = () => openai.requests.length + anthropic.requests.length;

beforeAll(async () => {
  openai = await startFakeOpenAI();
  anthropic = await startFakeAnthropic();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'fatal', SVC_GATEWAY_RETRIES: '0' });
  for (const [adapter, model, origin] of [
    ['openai', 'gpt-4o', openai.url],
    ['anthropic', 'claude-x', anthropic.url],
  ] as const) {
    await upsertFakeEndpoint(gw, {
      adapter,
      model,
      origin,
      capabilities: 'chat,streaming,responses',
      maxOutputTokens: OUTPUT_CEILING,
    });
    await gw.svc(['keys', 'platform', 'set', '--provider', adapter, '--secret', `sk-platform-${adapter}`]);
  }
  // Snapshots loaded: platform traffic reaches the escrow of a workspace that has no wallet (402 on
  // /v1; the alternate envelope has no payment type: permission_error, 403).
  await eventually(
    async () => (await send(PROBES[0]!, '8')).status === 402 && (await send(PROBES[3]!, '8')).status === 403,
    30_000,
    'gateway snapshots',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await openai?.close();
  await anthropic?.close();
});

describe('an output limit the gateway cannot read is refused before any upstream call (SPEC 8, 4.2 rule 1)', () => {
  it('unfunded workspace: every strange limit on every route answers 400 naming the field, nothing upstream', async () => {
    const before = upstreamCalls();
    const answers: string[] = [];
    for (const probe of PROBES)
      for (const value of STRANGE) {
        const r = await send(probe, value);
        const error = (r.json?.error ?? {}) as { type?: string; param?: string; message?: string };
        const ok =
          r.status === 400 &&
          error.type === 'invalid_request_error' &&
          (probe.alt ? r.json?.type === 'error' : error.param === probe.field);
        if (!ok) answers.push(`${probe.route}=${value}: ${r.status} ${r.text.slice(0, 160)}`);
      }
    expect(answers, 'answers that were not a 400 in the dialect envelope').toEqual([]);
    expect(upstreamCalls() - before, 'upstream calls made').toBe(0);
  });

  it(`a burst of 100 against ${FUNDED_USD} USD: none served, the balance untouched`, async () => {
    const grant = await call(
      gw.serve.httpUrl,
      'POST',
      `/api/workspaces/${gw.boot.workspace_id}/wallet/grants`,
      {
        token: gw.admin,
        body: { amount_usd: FUNDED_USD, reason: 'finding 2', idempotency_key: 'finding-2' },
      },
    );
    expect(grant.status, grant.text).toBeLessThan(300);
    const before = upstreamCalls();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => {
        const probe = PROBES[i % PROBES.length]!;
        return send(probe, STRANGE[i % STRANGE.length]!);
      }),
    );
    const served = results.filter((r) => r.status === 200).length;
    // Settlement of anything served runs in the ingest role; give it a moment to land.
    await sleep(served > 0 ? 3_000 : 500);
    const wallet = await walletOf(gw, gw.boot.workspace_id);
    expect({ served, upstream: upstreamCalls() - before, balance: wallet.balance_usd }).toEqual({
      served: 0,
      upstream: 0,
      balance: FUNDED_USD,
    });
  });

  it('no limit at all: the hold covers the model ceiling from the registry, so a tiny balance answers 402', async () => {
    const before = upstreamCalls();
    const chat = await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
      token: gw.boot.api_key,
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
    });
    const responses = await call(gw.serve.httpUrl, 'POST', '/v1/responses', {
      token: gw.boot.api_key,
      body: { model: 'gpt-4o', input: 'hi' },
    });
    expect([chat.status, responses.status]).toEqual([402, 402]);
    expect(upstreamCalls() - before).toBe(0);
  });

  it('n completions hold n times the output: a request the balance covers once is refused when it asks for 3 choices', async () => {
    const body = (n: number) => ({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 200,
      n,
    });
    const before = upstreamCalls();
    const three = await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
      token: gw.boot.api_key,
      body: body(3),
    });
    expect(three.status, three.text).toBe(402);
    expect(upstreamCalls() - before).toBe(0);
    const one = await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
      token: gw.boot.api_key,
      body: body(1),
    });
    expect(one.status, one.text).toBe(200);
  });

  it('an n no hold can size ("5", true, 1.5, [3], 0, -1) is not sent upstream on the wallet: 400 naming n, nothing upstream', async () => {
    const before = upstreamCalls();
    const answers: [unknown, number, string | undefined][] = [];
    for (const n of ['5', true, 1.5, [3], 0, -1]) {
      const r = await call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
        token: gw.boot.api_key,
        body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 16, n },
      });
      answers.push([n, r.status, (r.json?.error as { code?: string } | undefined)?.code]);
      expect(r.text).toContain('n=');
    }
    expect(answers.every(([, status, code]) => status === 400 && code === 'no_compatible_candidate')).toBe(
      true,
    );
    expect(upstreamCalls() - before).toBe(0);
  });

  it('state the upstream holds (previous_response_id, conversation, stored prompt) cannot be held for on the wallet: 400, nothing upstream', async () => {
    const before = upstreamCalls();
    const answers: [string, number, string | undefined][] = [];
    for (const [field, value] of [
      ['previous_response_id', 'resp_abc'],
      ['conversation', 'conv_abc'],
      ['prompt', { id: 'pmpt_abc' }],
    ] as const) {
      const r = await call(gw.serve.httpUrl, 'POST', '/v1/responses', {
        token: gw.boot.api_key,
        body: { model: 'gpt-4o', input: 'hi', max_output_tokens: 16, [field]: value },
      });
      answers.push([field, r.status, (r.json?.error as { code?: string } | undefined)?.code]);
    }
    expect(answers).toEqual([
      ['previous_response_id', 400, 'no_compatible_candidate'],
      ['conversation', 400, 'no_compatible_candidate'],
      ['prompt', 400, 'no_compatible_candidate'],
    ]);
    expect(upstreamCalls() - before).toBe(0);
  });
});
