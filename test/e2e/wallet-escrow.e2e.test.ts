import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresEscrow } from '../../src/commands/wallet/postgres-escrow.js';
import {
  type RequestCompleted,
  requestCompletedSchema,
} from '../../src/events/envelopes/request-completed.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { addUsd, formatUsd, mulUsd, parseUsd, subUsd, ZERO_USD } from '../../src/lib/money.js';
import { replayLedger } from '../../src/projections/wallet/replay.js';
import { createSettlement } from '../../src/roles/wallet.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { connect, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 1.4 and 8 escrow holds: a wallet funded for exactly 50 holds meets 200 concurrent requests through
// the real gateway on a platform key. At most 50 are served, the rest get 402 in the caller's
// envelope, and after settlement the balance is the funding minus the settled charges, never
// negative. Settlement is driven by calling settleRequest with each envelope read from the bus
// (the ingest consumer will make the same call). Also: BYOK traffic holds nothing, and without
// SVC_PAYMENT_API_KEY top-ups answer "payments not configured".

const INPUT_PRICE = '0.000001';
const OUTPUT_PRICE = '0.000002';
const MAX_TOKENS = 16;
const BODY = JSON.stringify({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'hello wallet' }],
  max_tokens: MAX_TOKENS,
});
// The gateway's estimate (src/gateway/hold.ts): prompt ceil(bytes / 4) at the input
// price plus max_tokens at the output price.
const HOLD = addUsd(
  mulUsd(parseUsd(INPUT_PRICE), Math.ceil(Buffer.byteLength(BODY) / 4)),
  mulUsd(parseUsd(OUTPUT_PRICE), MAX_TOKENS),
);
const FUNDING = mulUsd(HOLD, 50);

let fake: FakeOpenAI;
let gw: GatewayEnv;
let byokKey: string;

const chat = (key: string, body = BODY) =>
  fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  }).then(async (r) => ({
    status: r.status,
    requestId: r.headers.get('x-svc-request-id'),
    body: (await r.json()) as {
      error?: { type: string; code: string; message: string; request_id?: string };
    },
  }));

const wallet = async () =>
  (
    await fetch(`${gw.serve.httpUrl}/api/workspaces/${gw.boot.workspace_id}/wallet`, {
      headers: { authorization: `Bearer ${gw.admin}` },
    })
  ).json() as Promise<{ balance_usd: string; held_usd: string; available_usd: string }>;

const envelopes = async (): Promise<RequestCompleted[]> => {
  const { rows } = await gw.db.pool.query<{ data: Buffer }>(
    "SELECT data FROM svc_bus_messages WHERE subject LIKE 'svc.requests.%' AND subject NOT LIKE '%.body.%'",
  );
  return rows.map((r) => requestCompletedSchema.parse(JSON.parse(r.data.toString('utf8'))));
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // No ingest role here: settlement is driven by the test, so nothing frees funds mid-burst and
  // exactly the funded number of holds must fit (ingest's own settlement is tested elsewhere).
  gw = await startGatewayEnv({ SVC_GATEWAY_RETRIES: '0' }, ['--roles', 'gateway,control-plane,projector']);
  await gw.svc([
    'registry',
    'upsert',
    '--lane',
    'openai',
    '--adapter',
    'openai',
    '--model',
    'gpt-4o-mini',
    '--provider-model-id',
    'gpt-4o-mini-2024-07-18',
    '--base-url',
    fake.url,
    '--capabilities',
    'chat,streaming',
    '--input-price-per-token',
    INPUT_PRICE,
    '--output-price-per-token',
    OUTPUT_PRICE,
  ]);
  await gw.svc([
    'keys',
    'platform',
    'set',
    '--provider',
    'openai',
    '--secret',
    'sk-platform-key',
    '--base-url',
    fake.url,
  ]);
  const byok = await gw.svc([
    'bootstrap',
    '--workspace',
    'Gw',
    '--org',
    'Gw Org',
    '--project',
    'Byok Project',
  ]);
  byokKey = byok.api_key as string;
  await connect(gw, {
    provider: 'openai',
    projectId: byok.project_id as string,
    secret: 'sk-byok-key',
    baseUrl: fake.url,
  });
  // Snapshots loaded: platform traffic reaches the escrow (no wallet yet) and BYOK traffic is served.
  await eventually(
    async () => (await chat(gw.boot.api_key)).status === 402 && (await chat(byokKey)).status === 200,
    10_000,
    'gateway snapshots',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('escrow on the request path', () => {
  it('an unfunded workspace answers 402 in the primary envelope before any upstream call', async () => {
    const upstreamBefore = fake.requests.filter((r) => r.apiKey === 'sk-platform-key').length;
    const r = await chat(gw.boot.api_key);
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({
      type: 'insufficient_quota',
      code: 'insufficient_funds',
      request_id: r.requestId,
    });
    expect(fake.requests.filter((q) => q.apiKey === 'sk-platform-key')).toHaveLength(upstreamBefore);
  });

  it('200 concurrent requests on a wallet funded for exactly 50 holds: at most 50 served, the rest 402', async () => {
    await gw.svc([
      'wallet',
      'grant',
      '--workspace',
      gw.boot.workspace_id,
      '--amount',
      formatUsd(FUNDING),
      '--reason',
      'escrow test',
      '--idempotency-key',
      'escrow-50',
    ]);
    expect(await wallet()).toMatchObject({
      balance_usd: formatUsd(FUNDING),
      available_usd: formatUsd(FUNDING),
    });

    const before = new Set((await envelopes()).map((e) => e.request_id));
    const results = await Promise.all(Array.from({ length: 200 }, () => chat(gw.boot.api_key)));
    const served = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(served.length).toBeLessThanOrEqual(50);
    // Nothing settles during the burst, so exactly the funded number of holds fit.
    expect(served).toHaveLength(50);
    for (const r of refused) {
      expect({ status: r.status, error: r.body.error }).toMatchObject({
        status: 402,
        error: { type: 'insufficient_quota', code: 'insufficient_funds', request_id: r.requestId },
      });
    }
    const during = await wallet();
    expect(during).toMatchObject({ held_usd: formatUsd(FUNDING), available_usd: '0' });

    // BYOK traffic holds nothing: served although the wallet has nothing available.
    const byok = await chat(byokKey);
    expect(byok.status).toBe(200);
    const byokHold = await gw.db.pool.query('SELECT 1 FROM workspace_wallet_holds WHERE hold_id = $1', [
      byok.requestId,
    ]);
    expect(byokHold.rowCount).toBe(0);

    // Settlement: every envelope of the burst, as the ingest consumer will hand them over.
    await eventually(
      async () => (await envelopes()).filter((e) => !before.has(e.request_id)).length >= 201,
      10_000,
      'request.completed envelopes',
    );
    const burst = (await envelopes()).filter((e) => !before.has(e.request_id));
    const store = new PostgresEventStore(gw.db.pool, gw.db.url);
    const { settleRequest } = createSettlement({ pool: gw.db.pool, store, waitForBalance: true });
    // The ingest role of `svc serve` settles each request as it stores it; settling again here
    // must be a no-op (replayed) or the first settlement (charged), never a second charge.
    let charged = ZERO_USD;
    try {
      for (const e of burst) {
        const s = await settleRequest(e);
        if (served.some((r) => r.requestId === e.request_id)) {
          expect(['charged', 'replayed']).toContain(s.outcome);
          charged = addUsd(charged, parseUsd(e.total_cost_usd));
          expect(parseUsd(e.total_cost_usd) <= HOLD).toBe(true);
        } else expect(['skipped', 'replayed']).toContain(s.outcome);
      }
      // Redelivery settles nothing twice.
      for (const e of burst.slice(0, 20))
        expect(['replayed', 'skipped']).toContain((await settleRequest(e)).outcome);
    } finally {
      await store.close();
    }
    await eventually(async () => (await wallet()).held_usd === '0', 10_000, 'every hold settled');
    expect(charged > 0n).toBe(true);
    const after = await wallet();
    const expected = formatUsd(subUsd(FUNDING, charged));
    expect(after).toMatchObject({ balance_usd: expected, held_usd: '0', available_usd: expected });
    expect(parseUsd(after.balance_usd) >= 0n).toBe(true);
    const replay = await replayLedger(gw.db.pool, gw.boot.workspace_id);
    expect(replay.balance_usd).toBe(expected);
    expect(replay.differences).toEqual([]);
  });
});

describe('a chunked body (no content-length) holds for the bytes received', () => {
  // SPEC 8 escrow hold: the prompt estimate is the body actually received, not a header that a
  // chunked request does not send; embeddings estimate from the input itself.
  const EMBEDDINGS_PRICE = '0.0001';
  const OUTPUT_PART = mulUsd(parseUsd(OUTPUT_PRICE), MAX_TOKENS);
  let key: string;
  let workspaceId: string;

  const chunked = (path: string, body: string) =>
    new Promise<{ status: number; body: { error?: { type: string; code: string } } }>((resolve, reject) => {
      const req = httpRequest(
        `${gw.serve.httpUrl}${path}`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'transfer-encoding': 'chunked',
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      req.end(body.slice(half));
    });
  const platformCalls = () => fake.requests.filter((r) => r.apiKey === 'sk-platform-key').length;
  const chunkedWallet = async () =>
    (
      await fetch(`${gw.serve.httpUrl}/api/workspaces/${workspaceId}/wallet`, {
        headers: { authorization: `Bearer ${gw.admin}` },
      })
    ).json() as Promise<{ available_usd: string }>;

  beforeAll(async () => {
    await gw.svc([
      'registry',
      'upsert',
      '--lane',
      'openai',
      '--adapter',
      'openai',
      '--model',
      'text-embedding-3-small',
      '--provider-model-id',
      'text-embedding-3-small',
      '--base-url',
      fake.url,
      '--capabilities',
      'embeddings',
      '--input-price-per-token',
      EMBEDDINGS_PRICE,
      '--output-price-per-token',
      EMBEDDINGS_PRICE,
    ]);
    const boot = await gw.svc([
      'bootstrap',
      '--workspace',
      'Chunked',
      '--org',
      'Chunked Org',
      '--project',
      'Chunked',
    ]);
    key = boot.api_key as string;
    workspaceId = boot.workspace_id as string;
    // Exactly the output part of a chat hold: enough only for an estimate that ignores the prompt.
    await gw.svc([
      'wallet',
      'grant',
      '--workspace',
      workspaceId,
      '--amount',
      formatUsd(OUTPUT_PART),
      '--reason',
      'chunked test',
      '--idempotency-key',
      'chunked-1',
    ]);
    await eventually(
      async () => (await chunkedWallet()).available_usd === formatUsd(OUTPUT_PART),
      10_000,
      'the chunked workspace wallet',
    );
    await eventually(
      async () =>
        (await chat(key)).status === 402 && (await chat(key)).body.error?.code === 'insufficient_funds',
      10_000,
      'the chunked project and the embeddings model in the gateway',
    );
  });

  it('chat: the prompt bytes of a chunked body are held, so output-only funds are refused with 402', async () => {
    const before = platformCalls();
    const r = await chunked('/v1/chat/completions', BODY);
    expect(r).toMatchObject({
      status: 402,
      body: { error: { type: 'insufficient_quota', code: 'insufficient_funds' } },
    });
    expect(platformCalls()).toBe(before);
  });

  it('embeddings on a wallet with 0 available: 402 for string and token-id input, no upstream call', async () => {
    // Every remaining cent held elsewhere: nothing is available.
    const escrow = new PostgresEscrow(gw.db.pool);
    const { available_usd } = await chunkedWallet();
    expect(await escrow.place(`chunked-all:${workspaceId}`, workspaceId, available_usd)).toEqual({
      ok: true,
    });
    expect((await chunkedWallet()).available_usd).toBe('0');
    const before = platformCalls();
    for (const input of ['hello chunked embeddings', [1, 2, 3]]) {
      const r = await chunked('/v1/embeddings', JSON.stringify({ model: 'text-embedding-3-small', input }));
      expect(r).toMatchObject({
        status: 402,
        body: { error: { type: 'insufficient_quota', code: 'insufficient_funds' } },
      });
    }
    expect(platformCalls()).toBe(before);
  });
});

describe('payments not configured', () => {
  it('top-ups answer a clear 503 while BYOK traffic is unaffected', async () => {
    const topUp = await fetch(`${gw.serve.httpUrl}/api/workspaces/${gw.boot.workspace_id}/wallet/topups`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount_usd: '10.00' }),
    });
    expect(topUp.status).toBe(503);
    expect(((await topUp.json()) as { message: string }).message).toMatch(/^payments not configured/);
    const config = await fetch(`${gw.serve.httpUrl}/api/payments/config`, {
      headers: { authorization: `Bearer ${gw.admin}` },
    });
    expect(await config.json()).toMatchObject({ enabled: false, publishable_key: null });
    expect((await chat(byokKey)).status).toBe(200);
  });
});
