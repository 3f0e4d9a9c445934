import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, oversized, stall, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { type FakePaymentApi, startFakePaymentApi } from '../fakes/payment-api.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call, missingRows, requestRow, sleep, walletOf } from '../helpers/outside.js';

// Guarantees that hold today but that no test pinned (so a
// regression would be silent), and one that does not hold.
// - SPEC 1.10: full payload capture switched by organization, project and API-key configuration
//   (PATCH .../tracing): on captures bodies, off stops capture. Passes today: a regression guard.
// - SPEC 7.3, 7.7: ResponseTooLarge is not retried (the same candidate returns the same body), while
//   a Timeout is. Passes today: a regression guard.
// - SPEC 3 "idempotent on the refund id": a refund request sent twice without a refund id (a client
//   retry) refunds twice today. Fails today.

const MAX_UPSTREAM = 65_536;
const RETRIES = 2;
const PAYMENT_KEY = 'sk_test_gaps_fake_0123456789';
const WEBHOOK_SECRET = 'whsec_test_gaps_secret_0123456789';

let fake: FakeOpenAI;
let payments: FakePaymentApi;
let gw: GatewayEnv;

const chat = (model = 'gpt-4o') =>
  call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
    token: gw.boot.api_key,
    body: { model, messages: [{ role: 'user', content: 'capture me maybe' }], max_tokens: 8 },
  });

/** A served request's row, once ingest stored it. */
const servedRow = async () => {
  const r = await chat();
  expect(r.status, r.text.slice(0, 200)).toBe(200);
  const id = r.headers.get('x-svc-request-id')!;
  expect(await missingRows(gw, gw.boot.org_id, [id], 15_000)).toEqual([]);
  return (await requestRow(gw, gw.boot.org_id, id))!;
};

/** Requests until one's capture matches (the switch reaches the gateway by notification). */
const captureBecomes = async (full: boolean) => {
  let row = await servedRow();
  for (let i = 0; i < 10 && row.full_tracing !== full; i++) {
    await sleep(300);
    row = await servedRow();
  }
  return row;
};

const toggle = (path: string, enabled: boolean) =>
  call(gw.serve.httpUrl, 'PATCH', path, { token: gw.admin, body: { enabled } });

beforeAll(async () => {
  fake = await startFakeOpenAI();
  payments = await startFakePaymentApi({ apiKey: PAYMENT_KEY });
  gw = await startGatewayEnv({
    SVC_LOG_LEVEL: 'fatal',
    SVC_GATEWAY_RETRIES: String(RETRIES),
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    SVC_GATEWAY_ATTEMPT_TIMEOUT_MS: '700',
    SVC_GATEWAY_MAX_UPSTREAM_BYTES: String(MAX_UPSTREAM),
    SVC_PAYMENT_API_KEY: PAYMENT_KEY,
    SVC_PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    SVC_PAYMENT_PUBLISHABLE_KEY: 'pk_test_gaps',
    SVC_PAYMENT_API_BASE: payments.url,
  });
  await addOpenAiEndpoint(gw, fake.url);
  await eventually(async () => (await chat()).status === 200, 15_000, 'the gateway serves the project');
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await payments?.close();
});

describe('full payload capture follows the org, project and API-key switches (SPEC 1.10)', () => {
  it('all off: a request is recorded without bodies', async () => {
    const row = await servedRow();
    expect({ full: row.full_tracing, body: Boolean(row.has_request_body) }).toEqual({
      full: false,
      body: false,
    });
  });

  for (const level of ['org', 'project', 'api key'] as const) {
    it(`the ${level} switch on captures the request body (fetchable), off stops capture`, async () => {
      const path =
        level === 'org'
          ? `/api/orgs/${gw.boot.org_id}/tracing`
          : level === 'project'
            ? `/api/projects/${gw.boot.project_id}/tracing`
            : `/api/api-keys/${gw.boot.api_key_id}/tracing`;
      const on = await toggle(path, true);
      expect(on.status, on.text).toBe(200);
      const captured = await captureBecomes(true);
      expect({ full: captured.full_tracing, body: Boolean(captured.has_request_body) }).toEqual({
        full: true,
        body: true,
      });
      const url = (captured.body_urls as { request: string | null }).request;
      expect(url).toBeTruthy();
      const body = await call(gw.serve.httpUrl, 'GET', url!, { token: gw.admin });
      expect({ status: body.status, hasPrompt: body.text.includes('capture me maybe') }).toEqual({
        status: 200,
        hasPrompt: true,
      });

      const off = await toggle(path, false);
      expect(off.status, off.text).toBe(200);
      const plain = await captureBecomes(false);
      expect({ full: plain.full_tracing, body: Boolean(plain.has_request_body) }).toEqual({
        full: false,
        body: false,
      });
    });
  }
});

describe('retry verdicts of gateway-side failures (SPEC 7.3)', () => {
  it(`ResponseTooLarge is not retried: one upstream call for a reply over ${MAX_UPSTREAM} bytes, with ${RETRIES} retries allowed`, async () => {
    fake.reset();
    fake.enqueue(oversized(MAX_UPSTREAM * 4), oversized(MAX_UPSTREAM * 4), oversized(MAX_UPSTREAM * 4));
    const r = await chat();
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(fake.requests.length).toBe(1);
    fake.reset();
  });

  it(`a Timeout is retried: ${1 + RETRIES} upstream calls when every attempt stalls past the attempt timeout`, async () => {
    fake.reset();
    fake.enqueue(stall(3_000), stall(3_000), stall(3_000));
    const r = await chat();
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(fake.requests.length).toBe(1 + RETRIES);
    fake.reset();
  });
});

describe('refunds are idempotent (SPEC 3)', () => {
  it('the same refund request sent twice without a refund id (a client retry) refunds at most once', async () => {
    const ws = gw.boot.workspace_id;
    const topUp = await call(gw.serve.httpUrl, 'POST', `/api/workspaces/${ws}/wallet/topups`, {
      token: gw.admin,
      body: { amount_usd: '25.00' },
    });
    expect(topUp.status, topUp.text).toBe(201);
    const intentId = (topUp.json as { payment_intent_id: string }).payment_intent_id;
    const event = payments.succeed(intentId);
    const delivered = await fetch(`${gw.serve.httpUrl}/api/payments/webhooks/stripe`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': payments.sign(event, WEBHOOK_SECRET),
      },
      body: event,
    });
    expect(delivered.status).toBe(200);
    const funded = await walletOf(gw, ws);

    const refund = () =>
      call(gw.serve.httpUrl, 'POST', `/api/workspaces/${ws}/wallet/refunds`, {
        token: gw.admin,
        body: { payment_intent_id: intentId, amount_usd: '5.00' },
      });
    const first = await refund();
    const retry = await refund();
    const after = await walletOf(gw, ws);
    const answers = `answers ${first.status} then ${retry.status}`;
    expect(
      payments.refunds.length,
      `refunds issued at the payment provider (${answers})`,
    ).toBeLessThanOrEqual(1);
    expect(
      Number(funded.balance_usd) - Number(after.balance_usd),
      'USD taken from the wallet',
    ).toBeLessThanOrEqual(5);
  });
});
