import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RequestCompleted,
  requestCompletedSchema,
} from '../../src/events/envelopes/request-completed.js';
import { addUsd, formatUsd, parseUsd, subUsd, ZERO_USD } from '../../src/lib/money.js';
import { replayLedger } from '../../src/projections/wallet/replay.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Issues 10 and 11 together, with nothing driven by the test: platform-key traffic through the
// real openai SDK holds wallet funds at the gateway, the ingest role of the same `svc serve`
// stores each request.completed and settles its hold (SPEC 2.12), and the wallet ends at the
// funding minus exactly the priced spend of the envelopes, with `svc ledger replay` agreeing.

const FUNDING = '5.00';

let fake: FakeOpenAI;
let gw: GatewayEnv;

const wallet = async () =>
  (
    await fetch(`${gw.serve.httpUrl}/api/workspaces/${gw.boot.workspace_id}/wallet`, {
      headers: { authorization: `Bearer ${gw.admin}` },
    })
  ).json() as Promise<{ balance_usd: string; held_usd: string; available_usd: string }>;

const envelope = async (requestId: string): Promise<RequestCompleted | null> => {
  const { rows } = await gw.db.pool.query<{ data: Buffer }>(
    'SELECT data FROM svc_bus_messages WHERE subject = $1',
    [`svc.requests.${gw.boot.org_id}.${requestId}`],
  );
  return rows[0] ? requestCompletedSchema.parse(JSON.parse(rows[0].data.toString('utf8'))) : null;
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // All roles on the embedded default: gateway, ingest (with settlement), projector, control plane.
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  // A platform key only: no BYOK connection, so every request is wallet traffic.
  await addOpenAiEndpoint(gw, fake.url, { connection: false });
  await gw.svc([
    'keys',
    'platform',
    'set',
    '--provider',
    'openai',
    '--secret',
    'sk-platform',
    '--base-url',
    fake.url,
  ]);
  await gw.svc([
    'wallet',
    'grant',
    '--workspace',
    gw.boot.workspace_id,
    '--amount',
    FUNDING,
    '--reason',
    'settlement e2e',
    '--idempotency-key',
    'settle-e2e',
  ]);
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

describe('wallet traffic settled by the ingest role', () => {
  it('buffered and streamed requests are charged exactly their priced cost, once', async () => {
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    const ids: string[] = [];
    // The first call waits for the gateway's snapshots to see the endpoint and the platform key.
    await eventually(
      async () => {
        const r = await client.chat.completions
          .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'first' }] })
          .withResponse()
          .catch(() => null);
        if (r?.response.status !== 200) return false;
        ids.push(r.response.headers.get('x-svc-request-id')!);
        return true;
      },
      15_000,
      'a served wallet request',
    );
    for (let i = 0; i < 3; i++) {
      const r = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: `buffered ${i}` }] })
        .withResponse();
      ids.push(r.response.headers.get('x-svc-request-id')!);
      const s = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: `streamed ${i}` }], stream: true })
        .withResponse();
      for await (const _ of s.data) {
        // drain
      }
      ids.push(s.response.headers.get('x-svc-request-id')!);
    }
    expect(new Set(ids).size).toBe(7);
    expect(fake.requests.filter((r) => r.apiKey === 'sk-platform').length).toBeGreaterThanOrEqual(7);

    // Every hold settled by the ingest role, none by the test.
    await eventually(async () => (await wallet()).held_usd === '0', 30_000, 'every hold settled');
    let charged = ZERO_USD;
    for (const id of ids) {
      const e = await envelope(id);
      expect(e, `envelope of ${id}`).not.toBeNull();
      expect(e!.billing.status).toBe('priced');
      expect(e!.funding).toBe('wallet');
      expect(parseUsd(e!.total_cost_usd) > 0n).toBe(true);
      charged = addUsd(charged, parseUsd(e!.total_cost_usd));
    }
    const expected = formatUsd(subUsd(parseUsd(FUNDING), charged));
    await eventually(async () => (await wallet()).balance_usd === expected, 30_000, 'the settled balance');
    expect(await wallet()).toMatchObject({ balance_usd: expected, held_usd: '0', available_usd: expected });

    // One charge per request in the ledger, and the replay agrees.
    const { rows } = await gw.db.pool.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM svc_events WHERE category = 'wallet' AND type = 'ChargeSettled'",
    );
    expect(Number(rows[0]!.n)).toBe(7);
    const replay = await replayLedger(gw.db.pool, gw.boot.workspace_id);
    expect(replay.balance_usd).toBe(expected);
    expect(replay.differences).toEqual([]);
  }, 120_000);
});
