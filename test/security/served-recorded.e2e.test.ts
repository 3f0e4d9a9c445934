import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic-upstream.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import {
  connect,
  eventually,
  type GatewayEnv,
  startGatewayEnv,
  upsertFakeEndpoint,
} from '../helpers/gateway-env.js';
import { call, missingRows, requestRow } from '../helpers/outside.js';

// `content: [null]` in a message (system or user), or `tool_calls: [null]`,
// threw inside pricing after the upstream had answered: a 500 when buffered, a full answer when
// streamed, and in both cases no request row, no charge and the hold left active. A body nested
// 10,000 levels deep did the same with tracing on (500 after the upstream served it; no row).
// Guarantee (SPEC 4.1 rule 10, 7.1, 7.2): what the gateway cannot read is refused before any
// upstream call with a 400 in the dialect's envelope; a served request is always recorded.

const DEPTH = 10_000;

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let gw: GatewayEnv;

const nested = (depth: number) => `${'{"a":'.repeat(depth)}"x"${'}'.repeat(depth)}`;

const UNREADABLE: { name: string; body: Record<string, unknown> }[] = [
  {
    name: 'system content [null]',
    body: {
      messages: [
        { role: 'system', content: [null] },
        { role: 'user', content: 'hi' },
      ],
    },
  },
  { name: 'user content [null]', body: { messages: [{ role: 'user', content: [null] }] } },
  {
    name: 'assistant tool_calls [null]',
    body: {
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [null] },
        { role: 'user', content: 'again' },
      ],
    },
  },
];

const upstreamCalls = () => openai.requests.length + anthropic.requests.length;

const chat = (body: string | Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', { token: gw.boot.api_key, body, headers });

beforeAll(async () => {
  openai = await startFakeOpenAI();
  anthropic = await startFakeAnthropic();
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'fatal', SVC_GATEWAY_RETRIES: '0' });
  for (const [adapter, model, origin] of [
    ['openai', 'gpt-4o', openai.url],
    ['anthropic', 'claude-x', anthropic.url],
  ] as const) {
    await upsertFakeEndpoint(gw, { adapter, model, origin, capabilities: 'chat,streaming,tools' });
    await connect(gw, { provider: adapter, secret: `sk-byok-${adapter}` });
  }
  await eventually(
    async () =>
      (await chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'ping' }] })).status === 200 &&
      (await chat({ model: 'claude-x', messages: [{ role: 'user', content: 'ping' }] })).status === 200,
    30_000,
    'gateway snapshots',
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await openai?.close();
  await anthropic?.close();
});

describe('a body the gateway cannot read is refused before any upstream call (SPEC 4.1 rule 10, 7.1)', () => {
  for (const model of ['gpt-4o', 'claude-x'])
    for (const stream of [false, true])
      it(`${model}, ${stream ? 'streamed' : 'buffered'}: content [null] and tool_calls [null] answer 400, nothing upstream`, async () => {
        const before = upstreamCalls();
        const answers = [];
        for (const { name, body } of UNREADABLE) {
          const r = await chat({ model, stream, ...body });
          const error = r.json?.error as { type?: string; param?: string } | undefined;
          answers.push({ name, status: r.status, type: error?.type, param: error?.param?.split('.')[0] });
        }
        expect(answers).toEqual(
          UNREADABLE.map(({ name }) => ({
            name,
            status: 400,
            type: 'invalid_request_error',
            param: expect.stringMatching(/^messages\[\d\]$/),
          })),
        );
        expect(upstreamCalls() - before, 'upstream calls made').toBe(0);
      });

  it(`a body nested ${DEPTH} levels deep, tracing on: 400 on /v1 and /alt, nothing upstream, the process healthy`, async () => {
    const before = upstreamCalls();
    const deep = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"metadata":${nested(DEPTH)}}`;
    const v1 = await chat(deep, { 'svc-enable-tracing': '1' });
    const alt = await call(gw.serve.httpUrl, 'POST', '/alt/v1/messages', {
      token: gw.boot.api_key,
      apiKeyHeader: true,
      headers: { 'svc-enable-tracing': '1' },
      body: `{"model":"claude-x","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":${nested(DEPTH)}}]}`,
    });
    expect({
      v1: [v1.status, (v1.json?.error as { type?: string } | undefined)?.type],
      alt: [alt.status, alt.json?.type, (alt.json?.error as { type?: string } | undefined)?.type],
    }).toEqual({
      v1: [400, 'invalid_request_error'],
      alt: [400, 'error', 'invalid_request_error'],
    });
    expect(upstreamCalls() - before, 'upstream calls made').toBe(0);
    const health = await call(gw.serve.httpUrl, 'GET', '/healthz');
    expect(health.status).toBe(200);
  });

  it(`tool-call arguments holding JSON nested ${DEPTH} levels deep (inside a string) to a messages-style model: 400, nothing upstream, never 500`, async () => {
    const before = upstreamCalls();
    const r = await chat({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 't', arguments: nested(DEPTH) } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
      ],
    });
    expect([r.status, (r.json?.error as { type?: string } | undefined)?.type], r.text.slice(0, 200)).toEqual([
      400,
      'invalid_request_error',
    ]);
    expect(upstreamCalls() - before, 'upstream calls made').toBe(0);
  });

  it('a served request with tracing on and an ordinary nested body is answered and recorded', async () => {
    const r = await chat(
      `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"metadata":{"k":${nested(20)}}}`,
      { 'svc-enable-tracing': '1' },
    );
    expect(r.status, r.text.slice(0, 200)).toBe(200);
    const id = r.headers.get('x-svc-request-id')!;
    expect(await missingRows(gw, gw.boot.org_id, [id], 15_000)).toEqual([]);
    const row = await requestRow(gw, gw.boot.org_id, id);
    expect(row).toMatchObject({ billing_status: 'priced', full_tracing: true });
  });
});
