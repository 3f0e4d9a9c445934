import { gzipSync } from 'node:zlib';
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpHttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// SPEC 4.3 (trace ingest), 4.5 (trace routes), 2.1-2.3 (normalized records), 1.10 (capture): the
// real OpenTelemetry exporters (OTLP/HTTP protobuf and JSON) send an agent-shaped tree to
// `svc serve`; the agent's LLM span calls the gateway with its traceparent, and the tree comes back
// through the query API with the gateway's own LLM span inside it, joined to its request row.

let fake: FakeOpenAI;
let gw: GatewayEnv;
const MAX_BODY = 1024 * 1024;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error', SVC_TRACE_MAX_BODY_BYTES: String(MAX_BODY) });
  await addOpenAiEndpoint(gw, fake.url);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const admin = () => ({ authorization: `Bearer ${gw.admin}`, 'content-type': 'application/json' });

const traceKeyFor = async (projectId: string): Promise<string> => {
  const r = await fetch(`${gw.serve.httpUrl}/api/trace-ingest-keys`, {
    method: 'POST',
    headers: admin(),
    body: JSON.stringify({ project_id: projectId, name: `k-${Math.random().toString(36).slice(2, 8)}` }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { secret: string }).secret;
};

const setProjectTracing = async (projectId: string, enabled: boolean) => {
  const r = await fetch(`${gw.serve.httpUrl}/api/projects/${projectId}/tracing`, {
    method: 'PATCH',
    headers: admin(),
    body: JSON.stringify({ enabled }),
  });
  expect(r.status).toBe(200);
};

interface TreeSpan {
  span_id: string;
  parent_span_id: string;
  span_name: string;
  openinference_span_kind: string;
  source: string;
  status: string;
  request_id: string;
  payload_state: string;
  model_name: string;
  prompt_tokens: number | null;
  artifacts: { artifact_id: string; kind: string; payload_state: string; object_key: string }[];
  events: { event_name: string }[];
  request: Record<string, unknown> | null;
}

const tree = async (
  orgId: string,
  traceId: string,
): Promise<{ status: number; spans: TreeSpan[]; raw: string }> => {
  const r = await fetch(`${gw.serve.httpUrl}/api/traces/${traceId}/tree?org_id=${orgId}`, {
    headers: admin(),
  });
  const raw = await r.text();
  return {
    status: r.status,
    raw,
    spans: r.status === 200 ? (JSON.parse(raw) as { spans: TreeSpan[] }).spans : [],
  };
};

const treeOf = async (
  orgId: string,
  traceId: string,
  spans: number,
): Promise<{ spans: TreeSpan[]; raw: string }> => {
  let last = { status: 0, spans: [] as TreeSpan[], raw: '' };
  await eventually(
    async () => {
      last = await tree(orgId, traceId);
      return last.spans.length >= spans && last.spans.every((s) => s.status !== 'pending');
    },
    30_000,
    `trace ${traceId} with ${spans} spans`,
  );
  return last;
};

/** An agent run: AGENT > CHAIN > (LLM calling the gateway, TOOL, RETRIEVER), with payloads marked. */
const runAgent = async (
  exporter: SpanExporter,
  marker: string,
): Promise<{ traceId: string; llmSpanId: string; requestId: string }> => {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'agent-app' }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('agent-test');
  const child = (parent: Span, name: string, attributes: Record<string, string | number>) =>
    tracer.startSpan(name, { attributes, kind: SpanKind.INTERNAL }, trace.setSpan(context.active(), parent));

  const agent = tracer.startSpan('research-agent', {
    attributes: {
      'openinference.span.kind': 'AGENT',
      'agent.name': 'researcher',
      'session.id': `sess-${[...marker].reverse().join('')}`,
      'input.value': `agent input ${marker}`,
    },
  });
  const chain = child(agent, 'plan', {
    'openinference.span.kind': 'CHAIN',
    'input.value': `chain input ${marker}`,
  });
  const llm = child(chain, 'ChatCompletion', {
    'openinference.span.kind': 'LLM',
    'llm.model_name': 'gpt-4o',
    'llm.input_messages.0.message.role': 'user',
    'llm.input_messages.0.message.content': `prompt text ${marker}`,
  });
  const ctx = llm.spanContext();
  const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
  const answer = await client.chat.completions
    .create(
      { model: 'gpt-4o', messages: [{ role: 'user', content: `prompt text ${marker}` }] },
      {
        headers: {
          traceparent: `00-${ctx.traceId}-${ctx.spanId}-01`,
          'x-svc-session-id': `sess-${[...marker].reverse().join('')}`,
        },
      },
    )
    .withResponse();
  llm.setAttribute('llm.output_messages.0.message.content', `completion text ${marker}`);
  llm.setAttribute('llm.token_count.prompt', 12);
  llm.end();
  const tool = child(chain, 'search_web', {
    'openinference.span.kind': 'TOOL',
    'tool.name': 'search_web',
    'tool_call.function.arguments': `{"q":"tool args ${marker}"}`,
    'output.value': `tool result ${marker}`,
  });
  tool.end();
  const retriever = child(chain, 'retrieve', {
    'openinference.span.kind': 'RETRIEVER',
    'retrieval.documents.0.document.content': `retrieved doc ${marker}`,
  });
  retriever.setStatus({ code: SpanStatusCode.ERROR, message: 'index timeout' });
  retriever.end();
  chain.end();
  agent.end();
  await provider.forceFlush();
  await provider.shutdown();
  return {
    traceId: ctx.traceId,
    llmSpanId: ctx.spanId,
    requestId: answer.response.headers.get('x-svc-request-id') ?? '',
  };
};

describe('SPEC 4.3 trace ingest with the real OpenTelemetry exporters', () => {
  it('protobuf + gzip, capture off: the agent tree comes back with the gateway LLM span joined, and no payload text anywhere', async () => {
    const key = await traceKeyFor(gw.boot.project_id);
    const exporter = new OtlpProtoExporter({
      url: `${gw.serve.httpUrl}/v1/traces`,
      headers: { authorization: `Bearer ${key}` },
      compression: 'gzip' as never,
    });
    const run = await runAgent(exporter, 'm1x');
    const { spans, raw } = await treeOf(gw.boot.org_id, run.traceId, 6);
    expect(spans).toHaveLength(6);
    const kinds = spans.map((s) => s.openinference_span_kind).sort();
    expect(kinds).toEqual(['AGENT', 'CHAIN', 'LLM', 'LLM', 'RETRIEVER', 'TOOL']);
    const gatewaySpan = spans.find((s) => s.source === 'gateway')!;
    expect(gatewaySpan.parent_span_id).toBe(run.llmSpanId);
    expect(gatewaySpan.request_id).toBe(run.requestId);
    expect(gatewaySpan.model_name).toBe('gpt-4o');
    expect(gatewaySpan.request).toMatchObject({ request_id: run.requestId });
    expect(spans.find((s) => s.openinference_span_kind === 'RETRIEVER')!.status).toBe('error');
    // Capture is off: the markers of every payload are nowhere in what the query API returns.
    expect(raw).not.toMatch(/m1x/);
    for (const s of spans) {
      expect(s.payload_state).toBe('summary_only');
      for (const a of s.artifacts) {
        expect(a.payload_state).toBe('summary_only');
        expect(a.object_key).toBe('');
      }
    }
    expect(
      spans
        .find((s) => s.openinference_span_kind === 'TOOL')!
        .artifacts.map((a) => a.kind)
        .sort(),
    ).toEqual(['output', 'tool_arguments']);
    // The request's trace route finds the same tree.
    const byRequest = await fetch(
      `${gw.serve.httpUrl}/api/requests/${run.requestId}/trace?org_id=${gw.boot.org_id}`,
      {
        headers: admin(),
      },
    );
    expect(byRequest.status).toBe(200);
  });

  it('OTLP JSON, capture on for the project: payloads are stored, hashed and served through the artifact URL', async () => {
    await setProjectTracing(gw.boot.project_id, true);
    try {
      const key = await traceKeyFor(gw.boot.project_id);
      const exporter = new OtlpHttpJsonExporter({
        url: `${gw.serve.httpUrl}/v1/traces`,
        headers: { authorization: `Bearer ${key}` },
      });
      // The gateway's tenancy snapshot follows the toggle within its refresh.
      await new Promise((r) => setTimeout(r, 1_500));
      const run = await runAgent(exporter, 'm2y');
      const { spans } = await treeOf(gw.boot.org_id, run.traceId, 6);
      const llm = spans.find((s) => s.source !== 'gateway' && s.openinference_span_kind === 'LLM')!;
      expect(llm.payload_state).toBe('full');
      const input = llm.artifacts.find((a) => a.kind === 'input')!;
      expect(input.payload_state).toBe('full');
      const meta = await fetch(
        `${gw.serve.httpUrl}/api/traces/${run.traceId}/artifacts/${input.artifact_id}?org_id=${gw.boot.org_id}`,
        { headers: admin() },
      );
      expect(meta.status).toBe(200);
      const { url } = (await meta.json()) as { url: string };
      const bytes = await fetch(new URL(url, gw.serve.httpUrl));
      expect(bytes.status).toBe(200);
      expect(await bytes.text()).toContain('prompt text m2y');
      // The gateway's own LLM span captured its bodies too: its input is the request body by reference.
      const gatewaySpan = spans.find((s) => s.source === 'gateway')!;
      const body = gatewaySpan.artifacts.find((a) => a.kind === 'input')!;
      expect(body).toMatchObject({ payload_state: 'full', object_key: `request:${run.requestId}:req` });
      // A tampered signature is refused.
      const forged = new URL(url, gw.serve.httpUrl);
      forged.searchParams.set('signature', '0'.repeat(64));
      expect((await fetch(forged)).status).toBeGreaterThanOrEqual(400);
    } finally {
      await setProjectTracing(gw.boot.project_id, false);
    }
  });

  it('capture turned on for one trace ingest key only stores what that key sends', async () => {
    const key = await traceKeyFor(gw.boot.project_id);
    const created = await fetch(
      `${gw.serve.httpUrl}/api/trace-ingest-keys?project_id=${gw.boot.project_id}`,
      { headers: admin() },
    );
    const id = (await created.json()) as
      | { data?: { id: string; prefix: string }[] }
      | { id: string; prefix: string }[];
    const rows = Array.isArray(id) ? id : (id.data ?? []);
    const row = rows.find((r) => key.startsWith(r.prefix))!;
    const on = await fetch(`${gw.serve.httpUrl}/api/trace-ingest-keys/${row.id}/tracing`, {
      method: 'PATCH',
      headers: admin(),
      body: JSON.stringify({ enabled: true }),
    });
    expect(on.status).toBe(200);
    const provider = new BasicTracerProvider({
      spanProcessors: [
        new BatchSpanProcessor(
          new OtlpProtoExporter({
            url: `${gw.serve.httpUrl}/v1/traces`,
            headers: { authorization: `Bearer ${key}` },
          }),
        ),
      ],
    });
    const s = provider
      .getTracer('t')
      .startSpan('keyed', { attributes: { 'input.value': 'keyed input k3z' } });
    const traceId = s.spanContext().traceId;
    s.end();
    await provider.forceFlush();
    await provider.shutdown();
    const { spans } = await treeOf(gw.boot.org_id, traceId, 1);
    expect(spans[0]!.artifacts[0]).toMatchObject({ kind: 'input', payload_state: 'full' });

    // SPEC 1.10, 2.3: "stored only when ... policy allows it": an org policy without payload capture
    // keeps the same key's payloads out from the moment the trace-ingest role sees it.
    const policy = await fetch(`${gw.serve.httpUrl}/api/orgs/${gw.boot.org_id}/policy`, {
      method: 'PUT',
      headers: admin(),
      body: JSON.stringify({ schema_version: 1, payload_capture: false }),
    });
    expect(policy.status).toBe(200);
    try {
      let last: TreeSpan | undefined;
      await eventually(
        async () => {
          const p = new BasicTracerProvider({
            spanProcessors: [
              new BatchSpanProcessor(
                new OtlpProtoExporter({
                  url: `${gw.serve.httpUrl}/v1/traces`,
                  headers: { authorization: `Bearer ${key}` },
                }),
              ),
            ],
          });
          const span = p
            .getTracer('t')
            .startSpan('governed', { attributes: { 'input.value': 'governed p7q' } });
          const id = span.spanContext().traceId;
          span.end();
          await p.forceFlush();
          await p.shutdown();
          last = (await treeOf(gw.boot.org_id, id, 1)).spans[0];
          return last?.payload_state === 'summary_only';
        },
        20_000,
        'the policy without payload capture in force',
      );
      expect(last!.artifacts[0]).toMatchObject({ kind: 'input', payload_state: 'summary_only' });
      expect(JSON.stringify(last)).not.toContain('governed p7q');
    } finally {
      await fetch(`${gw.serve.httpUrl}/api/orgs/${gw.boot.org_id}/policy`, {
        method: 'DELETE',
        headers: admin(),
      });
    }
  });

  it('two projects of one organization sending the same ids keep their own spans and payloads', async () => {
    const created = await fetch(`${gw.serve.httpUrl}/api/projects`, {
      method: 'POST',
      headers: admin(),
      body: JSON.stringify({ org_id: gw.boot.org_id, name: 'Second Project' }),
    });
    expect(created.status).toBe(201);
    const second = ((await created.json()) as { project_id: string }).project_id;
    const [keyA, keyB] = [await traceKeyFor(gw.boot.project_id), await traceKeyFor(second)];
    await setProjectTracing(gw.boot.project_id, true);
    await setProjectTracing(second, true);
    try {
      const traceId = 'c'.repeat(32);
      const exportOf = (name: string, input: string) =>
        JSON.stringify({
          resourceSpans: [
            {
              scopeSpans: [
                {
                  spans: [
                    {
                      traceId,
                      spanId: 'd'.repeat(16),
                      name,
                      kind: 1,
                      startTimeUnixNano: '1700000000000000000',
                      endTimeUnixNano: '1700000001000000000',
                      attributes: [{ key: 'input.value', value: { stringValue: input } }],
                    },
                  ],
                },
              ],
            },
          ],
        });
      const send = (key: string, body: string) =>
        fetch(`${gw.serve.httpUrl}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body,
        });
      expect((await send(keyA, exportOf('project-a', 'PROJECT_A_PAYLOAD'))).status).toBe(200);
      expect((await send(keyB, exportOf('project-b', 'PROJECT_B_OVERWRITE'))).status).toBe(200);
      const { spans } = await treeOf(gw.boot.org_id, traceId, 2);
      expect(spans.map((s) => s.span_name).sort()).toEqual(['project-a', 'project-b']);
      const a = spans.find((s) => s.span_name === 'project-a')!;
      const meta = await fetch(
        `${gw.serve.httpUrl}/api/traces/${traceId}/artifacts/${a.artifacts[0]!.artifact_id}?org_id=${gw.boot.org_id}`,
        { headers: admin() },
      );
      const { url } = (await meta.json()) as { url: string };
      expect(await (await fetch(new URL(url, gw.serve.httpUrl))).text()).toBe('PROJECT_A_PAYLOAD');
    } finally {
      await setProjectTracing(gw.boot.project_id, false);
      await setProjectTracing(second, false);
    }
  });

  it('answers as OTLP/HTTP says: 401, 415, 400 with a Status, 413 over the cap, partial_success for refused spans', async () => {
    const key = await traceKeyFor(gw.boot.project_id);
    const post = (body: string | Uint8Array, headers: Record<string, string>) =>
      fetch(`${gw.serve.httpUrl}/v1/traces`, { method: 'POST', body, headers });
    expect((await post('{}', { 'content-type': 'application/json' })).status).toBe(401);
    expect(
      (await post('{}', { 'content-type': 'application/json', authorization: 'Bearer svc_ti_nope' })).status,
    ).toBe(401);
    expect((await post('{}', { 'content-type': 'text/plain', authorization: `Bearer ${key}` })).status).toBe(
      415,
    );
    const bad = await post('{"resourceSpans": 5}', {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/ExportTraceServiceRequest/);
    const garbage = await post(new Uint8Array([0x0a, 0xff, 0xff, 0xff]), {
      'content-type': 'application/x-protobuf',
      authorization: `Bearer ${key}`,
    });
    expect(garbage.status).toBe(400);
    const big = gzipSync(Buffer.alloc(MAX_BODY * 2, 0x20));
    const tooBig = await post(big, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      authorization: `Bearer ${key}`,
    });
    expect(tooBig.status).toBe(413);

    // A span naming another organization is refused, its neighbour accepted.
    const span = (spanId: string, attrs: { key: string; value: { stringValue: string } }[]) => ({
      traceId: 'a'.repeat(32),
      spanId,
      name: 'x',
      kind: 1,
      startTimeUnixNano: '1700000000000000000',
      endTimeUnixNano: '1700000001000000000',
      attributes: attrs,
    });
    const mixed = await post(
      JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [] },
            scopeSpans: [
              {
                scope: { name: 's' },
                spans: [
                  span('1'.repeat(16), [{ key: 'svc.org_id', value: { stringValue: 'org_someone_else' } }]),
                  span('2'.repeat(16), [{ key: 'svc.org_id', value: { stringValue: gw.boot.org_id } }]),
                ],
              },
            ],
          },
        ],
      }),
      { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    );
    expect(mixed.status).toBe(200);
    const answer = (await mixed.json()) as {
      partialSuccess?: { rejectedSpans: string; errorMessage: string };
    };
    expect(answer.partialSuccess?.rejectedSpans).toBe('1');
    expect(answer.partialSuccess?.errorMessage).toMatch(/organization/);
  });

  it('a second tenant never sees the first one: its key writes into its own org, and its org cannot read the other trace', async () => {
    const other = (await gw.svc([
      'bootstrap',
      '--workspace',
      'Other',
      '--org',
      'Other Org',
      '--project',
      'Other Project',
    ])) as {
      org_id: string;
      project_id: string;
    };
    const key = await traceKeyFor(other.project_id);
    const exporter = new OtlpProtoExporter({
      url: `${gw.serve.httpUrl}/v1/traces`,
      headers: { authorization: `Bearer ${key}` },
    });
    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
    const s = provider
      .getTracer('t')
      .startSpan('other-tenant-span', { attributes: { 'svc.project_id': other.project_id } });
    const traceId = s.spanContext().traceId;
    s.end();
    await provider.forceFlush();
    await provider.shutdown();
    await treeOf(other.org_id, traceId, 1);
    expect((await tree(gw.boot.org_id, traceId)).status).toBe(404);
  });
});
