import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertOpenAi } from '../fakes/anthropic-upstream-gateway.js';
import { type FakeOpenAI, startFakeOpenAI, status } from '../fakes/openai-upstream.js';
import { connect, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// Wire details real clients read (SPEC 4.1 route table, 4.2, 7.2): an agents SDK's trace export
// to /v1/traces/ingest is acknowledged, and an oversized /alt body is the Anthropic API's own
// request_too_large; an upstream's rejection reaches an SDK user with the upstream's code and param.

let gw: GatewayEnv;
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({ SVC_GATEWAY_MAX_REQUEST_BYTES: '200000' });
  await upsertOpenAi(gw, 'gpt-4o', fake.url);
  await connect(gw, { provider: 'openai', secret: 'sk-openai-tenant' });
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const ingest = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.serve.httpUrl}/v1/traces/ingest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'openai-beta': 'traces=v1', ...headers },
    body,
  });

describe('POST /v1/traces/ingest (SPEC 4.1)', () => {
  // The shape the Agents SDK's exporter sends: { data: [trace, span, ...] }.
  const exported = JSON.stringify({
    data: [
      {
        object: 'trace',
        id: 'trace_0123456789abcdef0123456789abcdef',
        workflow_name: 'Agent workflow',
        group_id: null,
        metadata: null,
      },
      {
        object: 'trace.span',
        id: 'span_0123456789abcdef01234567',
        trace_id: 'trace_0123456789abcdef0123456789abcdef',
        parent_id: null,
        started_at: '2026-11-24T05:00:00.000Z',
        ended_at: '2026-11-24T05:00:01.000Z',
        span_data: { type: 'agent', name: 'Assistant', handoffs: [], tools: [], output_type: 'text' },
        error: null,
      },
    ],
  });

  it('acknowledges an export under a service API key with a success envelope', async () => {
    const res = await ingest(exported, { authorization: `Bearer ${gw.boot.api_key}` });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ object: 'traces.ingest', accepted: 2, persisted: false });
  });

  it('refuses a caller without a key (401) and a body without data (400 naming data)', async () => {
    const anonymous = await ingest(exported);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const bad = await ingest('{"items":[]}', { authorization: `Bearer ${gw.boot.api_key}` });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: unknown }).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'data',
    });
  });
});

describe('an oversized /alt body (SPEC 4.2, 7.2)', () => {
  it('is 413 request_too_large, as the Anthropic API types it, through the Anthropic SDK', async () => {
    const client = new Anthropic({
      apiKey: gw.boot.api_key,
      baseURL: `${gw.serve.httpUrl}/alt`,
      maxRetries: 0,
    });
    const err = await client.messages
      .create({
        model: 'claude-sonnet',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'x'.repeat(300_000) }],
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.APIError);
    const e = err as InstanceType<typeof Anthropic.APIError>;
    expect(e.status).toBe(413);
    expect(e.error).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });
});

describe('an upstream 400 on /v1 (SPEC 7.1, 7.3)', () => {
  it("keeps the upstream's message, code and param, as the openai SDK reads them", async () => {
    const client = new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    let err: unknown;
    for (let i = 0; i < 50; i++) {
      fake.reset();
      fake.enqueue(
        status(400, {
          error: {
            message: "Invalid value for 'temperature': must be at most 2.",
            type: 'invalid_request_error',
            param: 'temperature',
            code: 'invalid_value',
          },
        }),
      );
      err = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], temperature: 3 })
        .then(
          () => null,
          (e: unknown) => e,
        );
      // The first calls may come before the gateway's snapshot knows the endpoint.
      if (err instanceof OpenAI.BadRequestError) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_value');
    expect(e.param).toBe('temperature');
    expect(e.message).toContain("Invalid value for 'temperature'");
    expect(e.type).toBe('invalid_request_error');
  });
});
