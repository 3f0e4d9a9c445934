import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OtlpSpan } from '../../src/traces/model.js';
import { decodeOtlpProtobuf } from '../../src/traces/otlp.js';
import { type FakeOpenAI, reply, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// The service's own telemetry over OTLP/HTTP (SPEC 4.3 "native OTLP export of operator telemetry";
// issue: conventions, item 6). A collector stand-in receives what `svc serve` exports with only the
// standard OTEL_* variables set: the protobuf the SDK's exporter sends (decoded here by the trace
// ingest's own reader) holds the HTTP server span of a chat request, its GenAI client span with the
// `gen_ai.*` attributes, joined to the caller's traceparent; bus spans from the gateway and from the
// data process; PostgreSQL spans; and the metrics export names the GenAI metrics.

interface Received {
  path: string;
  contentType: string;
  body: Buffer;
}

let collector: Server;
let collectorUrl: string;
const received: Received[] = [];
let fake: FakeOpenAI;
let gw: GatewayEnv;

interface Seen {
  span: OtlpSpan;
  service: string;
  roles: string;
}

const spans = (): Seen[] =>
  received
    .filter((r) => r.path === '/v1/traces')
    .flatMap((r) =>
      decodeOtlpProtobuf(r.body).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((span) => ({
            span,
            service: String(rs.resource.attributes['service.name']),
            roles: String(rs.resource.attributes['svc.roles'] ?? ''),
          })),
        ),
      ),
    );

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      received.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  fake = await startFakeOpenAI({ default: reply({ tokens: { promptTokens: 11, completionTokens: 7 } }) });
  gw = await startGatewayEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
    OTEL_SERVICE_NAME: 'svc-otel-e2e',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
  });
  await addOpenAiEndpoint(gw, fake.url);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await new Promise<void>((r) => (collector ? collector.close(() => r()) : r()));
});

describe('OpenTelemetry export with the OTEL_EXPORTER_OTLP_* variables set', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  let requestId = '';

  it('exports the server span and the GenAI span of a chat request, in the caller’s trace', async () => {
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    await eventually(
      async () => {
        const { response } = await client.chat.completions
          .create(
            { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] },
            { headers: { traceparent: `00-${traceId}-${callerSpan}-01` } },
          )
          .withResponse()
          .catch(() => ({ response: null }));
        if (response?.status !== 200) return false;
        requestId = response.headers.get('x-svc-request-id') ?? '';
        return true;
      },
      30_000,
      'a served chat request',
    );
    let genai: Seen | undefined;
    let server: Seen | undefined;
    await eventually(
      async () => {
        const all = spans();
        genai = all.find((s) => s.span.attributes['svc.request_id'] === requestId && s.span.kind === 3);
        server = all.find((s) => s.span.attributes['svc.request_id'] === requestId && s.span.kind === 2);
        return genai !== undefined && server !== undefined;
      },
      20_000,
      'the spans of the request at the collector',
    );
    expect(server!.span).toMatchObject({
      traceId,
      parentSpanId: callerSpan,
      name: 'POST /v1/chat/completions',
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
      },
    });
    expect(server!.service).toBe('svc-otel-e2e');
    expect(genai!.span).toMatchObject({
      traceId,
      parentSpanId: server!.span.spanId,
      name: 'chat gpt-4o',
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 11,
        'gen_ai.usage.output_tokens': 7,
        'svc.billing_status': 'priced',
      },
    });
    expect(genai!.span.events.map((e) => e.name)).toEqual(['gen_ai.attempt']);
    // No payload leaves in telemetry: the prompt is nowhere in the spans.
    expect(JSON.stringify(genai!.span.attributes)).not.toContain('hello');
  }, 60_000);

  it('exports bus spans from the gateway and the data process, and PostgreSQL spans', async () => {
    await eventually(
      async () => {
        const all = spans();
        const producer = all.some((s) => s.span.kind === 4 && s.span.name === 'send svc.requests');
        const consumer = all.some(
          (s) => s.span.kind === 5 && s.span.name === 'process svc.requests' && s.roles.includes('ingest'),
        );
        const db = all.some((s) => s.span.attributes['db.system.name'] === 'postgresql');
        return producer && consumer && db;
      },
      30_000,
      'producer, consumer and database spans',
    );
    const consumer = spans().find((s) => s.span.kind === 5 && s.span.name === 'process svc.requests')!;
    expect(consumer.span.attributes['messaging.destination.name']).toMatch(/^svc\.requests\./);
  }, 60_000);

  it('exports the GenAI and HTTP metrics', async () => {
    await eventually(
      async () => {
        const metrics = received.filter((r) => r.path === '/v1/metrics');
        const text = Buffer.concat(metrics.map((m) => m.body)).toString('latin1');
        return (
          metrics.every((m) => m.contentType === 'application/x-protobuf') &&
          text.includes('gen_ai.client.token.usage') &&
          text.includes('gen_ai.client.operation.duration') &&
          text.includes('http.server.request.duration')
        );
      },
      20_000,
      'the metrics at the collector',
    );
  }, 30_000);
});
