import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../../src/events/nats/bus.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { privateNats } from '../helpers/nats-server.js';

// Stop the bus, serve 100 requests, restart the bus, and find 100 envelopes
// delivered with none lost or duplicated (ARCHITECTURE.md: spool to a local file, drain later).

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

describe('a served request is never lost when the bus is down', () => {
  it('100 requests while NATS is stopped arrive exactly once after it returns', async () => {
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    await eventually(
      async () =>
        await client.chat.completions
          .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'warm' }] })
          .then(
            () => true,
            () => false,
          ),
      5_000,
      'gateway ready',
    );
    await nats.stop();
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: `n${i}` }] })
        .withResponse();
      expect(response.status).toBe(200);
      ids.push(response.headers.get('x-svc-request-id')!);
    }
    const health = await fetch(`${gw.serve.httpUrl}/healthz`);
    expect(health.status).toBe(503);

    await nats.start();
    const bus = new NatsBus({ servers: nats.url });
    const seen = new Map<string, number>();
    const consumer = await bus.consume(
      'test-reader',
      'svc.requests.>',
      async (m) => {
        seen.set(m.messageId, (seen.get(m.messageId) ?? 0) + 1);
        await m.ack();
      },
      { ackWaitMs: 10_000, maxDeliveries: 5 },
    );
    await eventually(async () => ids.every((id) => seen.has(id)), 45_000, 'all 100 envelopes');
    await new Promise((r) => setTimeout(r, 500));
    await consumer.close();
    await bus.close();
    for (const id of ids) expect(seen.get(id), id).toBe(1);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  });
});
