import { connect } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOpenAI, reply, startFakeOpenAI, status } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';

// The conventions clients of a gateway rely on, checked with the official SDKs (their retries on):
// a caller's x-request-id echoed beside x-svc-request-id; each attempt's upstream request id in the
// attempt trail and the query API; x-should-retry: false on final failures, so an SDK makes no
// second round of upstream calls; an upstream's Retry-After honoured between the gateway's tries;
// Retry-After and retry-after-ms on the gateway's own 429 (SPEC 7.4).

let fake: FakeOpenAI;
let gw: GatewayEnv;
const RETRIES = 1;

const openai = (maxRetries = 2) =>
  new OpenAI({ apiKey: gw.boot.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries });
const ask = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'hello there' }] };
type ApiError = InstanceType<typeof OpenAI.APIError>;
const failure = async (call: () => Promise<unknown>): Promise<ApiError> => {
  try {
    await call();
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the call succeeded');
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({
    SVC_GATEWAY_RETRIES: String(RETRIES),
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
  });
  await addOpenAiEndpoint(gw, fake.url);
  await eventually(
    async () =>
      (
        await fetch(`${gw.serve.httpUrl}/v1/models`, {
          headers: { authorization: `Bearer ${gw.boot.api_key}` },
        })
      ).status === 200,
    15_000,
    'the API key in the gateway',
  );
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('request ids', () => {
  it('echoes the caller’s x-request-id beside x-svc-request-id, buffered and streamed', async () => {
    const { response } = await openai()
      .chat.completions.create(ask, { headers: { 'x-request-id': 'caller-trace-42' } })
      .withResponse();
    expect(response.headers.get('x-svc-request-id')).toMatch(/^req_/);
    expect(response.headers.get('x-request-id')).toBe('caller-trace-42');

    const { data: stream, response: streamed } = await openai()
      .chat.completions.create({ ...ask, stream: true }, { headers: { 'x-request-id': 'caller-stream-7' } })
      .withResponse();
    for await (const _ of stream) {
      // drained
    }
    expect(streamed.headers.get('x-request-id')).toBe('caller-stream-7');
    expect(streamed.headers.get('x-svc-request-id')).toMatch(/^req_/);

    // One that is not a bounded, printable id is not echoed; the request is served all the same.
    const long = await fetch(`${gw.serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gw.boot.api_key}`,
        'content-type': 'application/json',
        'x-request-id': 'x'.repeat(200),
      },
      body: JSON.stringify(ask),
    });
    expect(long.status).toBe(200);
    expect(long.headers.get('x-request-id')).toBeNull();
  });

  it('records each attempt’s upstream request id in the trail and the query API', async () => {
    fake.enqueue(
      status(500, 'boom', { 'x-request-id': 'upstream-failed-1' }),
      reply({ headers: { 'x-request-id': 'upstream-served-2' } }),
    );
    const { response } = await openai().chat.completions.create(ask).withResponse();
    const id = response.headers.get('x-svc-request-id')!;
    let row: {
      upstream_request_id: string | null;
      attempts: { upstream_request_id: string | null }[];
    } | null = null;
    await eventually(
      async () => {
        const r = await fetch(`${gw.serve.httpUrl}/api/requests/${id}?org_id=${gw.boot.org_id}`, {
          headers: { authorization: `Bearer ${gw.admin}` },
        });
        if (r.status !== 200) return false;
        row = (await r.json()) as typeof row;
        return true;
      },
      15_000,
      'the request row',
    );
    expect(row!.upstream_request_id).toBe('upstream-served-2');
    expect(row!.attempts.map((a) => a.upstream_request_id)).toEqual([
      'upstream-failed-1',
      'upstream-served-2',
    ]);
  });
});

/** One raw HTTP/1.1 exchange: what the server sent until it closed the socket (or the time ran out). */
const rawExchange = (path: string, body: unknown, headers: Record<string, string>, timeoutMs = 5_000) =>
  new Promise<{ text: string; closed: boolean }>((resolve, reject) => {
    const url = new URL(gw.serve.httpUrl);
    const socket = connect(Number(url.port), url.hostname);
    const json = JSON.stringify(body);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, timeoutMs);
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      text += d.toString();
    });
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed: true });
    });
    socket.write(
      [
        `POST ${path} HTTP/1.1`,
        `host: ${url.host}`,
        'content-type: application/json',
        `content-length: ${Buffer.byteLength(json)}`,
        `authorization: Bearer ${gw.boot.api_key}`,
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        '',
        json,
      ].join('\r\n'),
    );
  });

describe('connections', () => {
  it('a streamed answer to a caller that sent Connection: close says so and closes once done, on /v1 and /alt', async () => {
    for (const [path, body, last] of [
      ['/v1/chat/completions', { ...ask, stream: true }, 'data: [DONE]'],
      ['/alt/v1/messages', { ...ask, max_tokens: 10, stream: true }, 'event: message_stop'],
    ] as const) {
      const r = await rawExchange(path, body, { connection: 'close' });
      expect(r.closed, path).toBe(true);
      expect(r.text).toMatch(/^HTTP\/1\.1 200/);
      expect(r.text.toLowerCase()).toContain('\r\nconnection: close\r\n');
      expect(r.text).toContain(last);
    }
  });
});

describe('retry signals', () => {
  it('a final upstream failure says x-should-retry: false, and the SDK (retries on) calls no more', async () => {
    fake.setDefault(status(500, 'down for good'));
    try {
      const err = await failure(() => openai(2).chat.completions.create(ask));
      expect(err.status).toBe(502);
      expect(err.headers?.get('x-should-retry')).toBe('false');
      // The gateway's own tries only: 1 + RETRIES, not three times that.
      expect(fake.requests).toHaveLength(1 + RETRIES);
    } finally {
      fake.reset();
    }
  });

  it('so does an error before any upstream call, on /v1 and on /alt', async () => {
    const unknown = await failure(() =>
      openai(2).chat.completions.create({ ...ask, model: 'no-such-model' }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.headers?.get('x-should-retry')).toBe('false');
    const anthropic = new Anthropic({
      apiKey: gw.boot.api_key,
      baseURL: `${gw.serve.httpUrl}/alt`,
      maxRetries: 2,
    });
    const alt = await anthropic.messages
      .create({ model: 'no-such-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
      );
    expect(alt?.status).toBe(404);
    expect(alt?.headers?.get('x-should-retry')).toBe('false');
    expect(fake.requests).toHaveLength(0);
  });

  it('honours an upstream Retry-After between its own tries, within one client call', async () => {
    fake.enqueue(status(429, 'slow down', { 'retry-after-ms': '400' }), reply());
    const started = Date.now();
    await openai(0).chat.completions.create(ask);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.receivedAt - fake.requests[0]!.receivedAt).toBeGreaterThanOrEqual(390);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
  });

  it('its own rate limit: 429 with Retry-After and retry-after-ms, and x-should-retry: true', async () => {
    const key = (await gw.svc(['keys', 'create', '--project', gw.boot.project_id, '--name', 'limited'])) as {
      api_key_id: string;
      api_key: string;
    };
    await gw.svc([
      'policy',
      'set',
      '--api-key',
      key.api_key_id,
      '--document',
      JSON.stringify({ schema_version: 1, rate_limits: { requests_per_minute: 1 } }),
    ]);
    const client = new OpenAI({ apiKey: key.api_key, baseURL: `${gw.serve.httpUrl}/v1`, maxRetries: 0 });
    // Served once the key and its policy reached the gateway; the next is over the limit.
    let err: ApiError | null = null;
    await eventually(
      async () => {
        const outcome = await client.chat.completions.create(ask).then(
          () => null,
          (e: unknown) => e as ApiError,
        );
        if (outcome?.status === 429) err = outcome;
        return err !== null;
      },
      20_000,
      'the policy rate limit',
    );
    const limited = err as unknown as ApiError;
    const seconds = Number(limited.headers?.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers?.get('retry-after-ms'))).toBe(seconds * 1_000);
    expect(limited.headers?.get('x-should-retry')).toBe('true');
    expect(limited.headers?.get('x-svc-request-id')).toMatch(/^req_/);
  });
});
