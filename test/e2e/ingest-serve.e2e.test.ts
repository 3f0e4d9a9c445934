import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChdbAnalyticsStore } from '../../src/analytics/chdb/store.js';
import { FsObjectStore } from '../../src/objects/fs-store.js';
import { readStoredBody } from '../../src/projections/ingest/pack.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// The ingest role inside `svc serve` (all roles, embedded default: Postgres bus + chdb).
// A request served by the gateway becomes a request row with its cost lines and, under full
// tracing, body frames in a pack; /metrics shows the write and /healthz the ingest consumer.

let fake: FakeOpenAI;
let gw: GatewayEnv;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  await addOpenAiEndpoint(gw, fake.url);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const metric = async (line: RegExp): Promise<number> => {
  const text = await (await fetch(`${gw.serve.httpUrl}/metrics`)).text();
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.split(' ').at(-1)) : Number.NaN;
};

describe('ingest role in svc serve', () => {
  it('stores a served request as rows and a body pack, and exposes the ingest metrics', async () => {
    const client = new OpenAI({
      apiKey: gw.boot.api_key,
      baseURL: `${gw.serve.httpUrl}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'svc-enable-tracing': '1' },
    });
    let requestId = '';
    await eventually(
      async () => {
        const r = await client.chat.completions
          .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello ingest' }] })
          .withResponse()
          .catch(() => null);
        requestId = r?.response.headers.get('x-svc-request-id') ?? '';
        return r?.response.status === 200;
      },
      10_000,
      'a served request',
    );
    const written = /^svc_ingest_clickhouse_durable_writes_total\{table="requests"\}/;
    await eventually(async () => (await metric(written)) >= 1, 30_000, 'the request row');
    expect(await metric(/^svc_ingest_clickhouse_suppressed_writes_total\{table="requests"\}/)).toBe(0);
    const health = (await (await fetch(`${gw.serve.httpUrl}/healthz`)).json()) as {
      dependencies: Record<string, { status: string }>;
    };
    expect(health.dependencies.ingest?.status).toBe('up');

    // chdb binds its folder to one process: read it once the service has stopped.
    await gw.serve.stop();
    const store = await ChdbAnalyticsStore.open({
      path: join(gw.env.SVC_DATA_DIR!, 'clickhouse'),
      database: 'svc',
    });
    try {
      const [row] = await store.query<Record<string, string>>(
        `SELECT org_id, provider, model_served, status, billing_status, total_cost_usd, cost_line_count,
                req_body_pack, req_body_offset, req_body_length, req_body_byte_count, req_body_blake3, full_tracing
           FROM requests FINAL WHERE request_id = {id:String}`,
        { id: requestId },
      );
      expect(row).toMatchObject({ provider: 'openai', model_served: 'gpt-4o', status: 'success' });
      const [lines] = await store.query<{ n: string }>(
        'SELECT count() AS n FROM request_cost_lines FINAL WHERE request_id = {id:String}',
        { id: requestId },
      );
      expect(Number(lines!.n)).toBe(Number(row!.cost_line_count));
      expect(row!.full_tracing).toBe(true);
      const objects = new FsObjectStore(join(gw.env.SVC_DATA_DIR!, 'objects'));
      const body = await readStoredBody(objects, row!.org_id!, {
        pack: row!.req_body_pack!,
        offset: Number(row!.req_body_offset),
        length: Number(row!.req_body_length),
        byteCount: Number(row!.req_body_byte_count),
        blake3: row!.req_body_blake3!,
      });
      expect(body.toString()).toContain('hello ingest');
    } finally {
      await store.close();
    }
  });
});
