import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { privateNats } from '../helpers/nats-server.js';

// SPEC 4.3, 6 on the scale-out bus: trace records travel on JetStream's TRACES stream
// (svc.traces.<org_id>.<trace_id>.<event_id>); an export sent twice (an exporter retrying after a
// lost answer) stores each span once, and the gateway's LLM span joins the same trace.

let fake: FakeOpenAI;
let gw: GatewayEnv;
let nats: Awaited<ReturnType<typeof privateNats>>;
let natsDir: string;

beforeAll(async () => {
  natsDir = await mkdtemp(join(tmpdir(), 'svc-nats-'));
  nats = await privateNats(natsDir);
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_NATS_URL: nats.url, SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await nats?.stop();
  await rm(natsDir, { recursive: true, force: true });
});

const TRACE = '5b8efff798038103d269b633813fc60c';
const ROOT = 'eee19b7ec3c1b174';

describe('SPEC 4.3 traces on JetStream', () => {
  it('stores an export sent twice once, with the gateway span inside the trace', async () => {
    const admin = { authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' };
    const created = await fetch(`${gw.serve.httpUrl}/api/trace-ingest-keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ project_id: gw.boot.project_id, name: 'js' }),
    });
    const { secret } = (await created.json()) as { secret: string };
    const body = JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'agent' } }] },
          scopeSpans: [
            {
              scope: { name: 'manual' },
              spans: [
                {
                  traceId: TRACE,
                  spanId: ROOT,
                  name: 'agent',
                  kind: 1,
                  startTimeUnixNano: String(BigInt(Date.now() - 1_000) * 1_000_000n),
                  endTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                  attributes: [{ key: 'openinference.span.kind', value: { stringValue: 'AGENT' } }],
                  status: { code: 1 },
                },
              ],
            },
          ],
        },
      ],
    });
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${gw.serve.httpUrl}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body,
      });
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({});
    }
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    await client.chat.completions.create(
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { traceparent: `00-${TRACE}-${ROOT}-01` } },
    );
    let spans: { span_id: string; parent_span_id: string; source: string; request: unknown }[] = [];
    await eventually(
      async () => {
        const r = await fetch(`${gw.serve.httpUrl}/api/traces/${TRACE}/tree?org_id=${gw.boot.org_id}`, {
          headers: admin,
        });
        if (r.status !== 200) return false;
        spans = ((await r.json()) as { spans: typeof spans }).spans;
        return spans.length >= 2;
      },
      30_000,
      'the trace with the gateway span',
    );
    // Let a late duplicate land if there were one, then count again.
    await new Promise((r) => setTimeout(r, 1_000));
    const again = await fetch(`${gw.serve.httpUrl}/api/traces/${TRACE}/tree?org_id=${gw.boot.org_id}`, {
      headers: admin,
    });
    spans = ((await again.json()) as { spans: typeof spans }).spans;
    expect(spans).toHaveLength(2);
    const gateway = spans.find((s) => s.source === 'gateway')!;
    expect(gateway.parent_span_id).toBe(ROOT);
    expect(gateway.request).not.toBeNull();
  });
});
