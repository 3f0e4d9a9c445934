import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call, type HttpAnswer, metricSum, sleep } from '../helpers/outside.js';

// A tenant can make the gateway call itself forever. A workspace manager
// creates a `primary` connection whose base_url is the gateway's own address and whose secret is
// the project's own API key; one chat request then produced 27,505 requests in about 60 s and went
// on after the client left.
// Guarantee (SPEC 4.7 outbound calls, 7.1, 7.2): whoever configured the loop, one client request
// makes a bounded number of requests and ends in an error. A tenant origin never dials the
// gateway's own listener; and every upstream call carries this deployment's hop mark, so a request
// that comes back by an address the gateway cannot know as its own (here a forwarding proxy, as a
// load balancer would be) is refused before any upstream call. Both hold with private destinations
// allowed by the operator, the case where nothing else stops the loop.

let gw: GatewayEnv;
let fake: FakeOpenAI;
let proxy: Server;
let proxyUrl: string;
let proxied = 0;

/** An HTTP forwarder to the gateway (a load balancer in front of it), counting what it forwards. */
const startProxy = (target: string) =>
  new Promise<Server>((resolve) => {
    const to = new URL(target);
    const server = createServer((req, res) => {
      proxied++;
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

const project = async (name: string) =>
  (await gw.svc(['bootstrap', '--workspace', 'Gw', '--org', 'Gw Org', '--project', name])) as {
    project_id: string;
    api_key: string;
  };

/** The project's `primary` connection pointing at `baseUrl`, authenticated with the project's own key. */
const loopingConnection = async (name: string, baseUrl: string) => {
  const p = await project(name);
  const r = await call(gw.serve.httpUrl, 'POST', '/api/provider-keys', {
    token: gw.admin,
    body: {
      org_id: gw.boot.org_id,
      project_id: p.project_id,
      provider: 'openai',
      name: 'primary',
      secret: p.api_key,
      base_url: baseUrl,
    },
  });
  expect(r.status, r.text).toBe(201);
  return p;
};

const chat = (apiKey: string, headers: Record<string, string> = {}) =>
  call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
    token: apiKey,
    headers,
    body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
  });

/** Upstream attempts that ended with `outcome` (a 503 before the connection is loaded is another). */
const attempts = (outcome: string) =>
  metricSum(gw.serve.httpUrl, new RegExp(`^svc_gateway_attempt_total\\{.*outcome="${outcome}"`)).then((n) =>
    Number.isNaN(n) ? 0 : n,
  );

/** One request, given up after `ms` (a storm never answers): null when it did not answer. */
const within = async (ms: number, send: () => Promise<HttpAnswer>) =>
  Promise.race([send(), sleep(ms).then(() => null)]);

/** Until the connection is in the gateway's snapshot (a 503 connection_not_configured before). */
const firstAnswer = async (apiKey: string): Promise<HttpAnswer | null> => {
  let answer: HttpAnswer | null = null;
  await eventually(async () => {
    answer = await within(15_000, () => chat(apiKey));
    return answer === null || answer.status !== 503;
  }, 20_000);
  return answer;
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  gw = await startGatewayEnv({
    SVC_TENANT_PRIVATE_DESTINATIONS: 'allow',
    SVC_GATEWAY_RETRIES: '2',
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    SVC_LOG_LEVEL: 'fatal',
  });
  proxy = await startProxy(gw.serve.httpUrl);
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  await addOpenAiEndpoint(gw, fake.url, { connection: false });
}, 120_000);
afterAll(async () => {
  // A storm (the code before the fix) goes on until the process stops.
  await gw?.stop();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await fake?.close();
});

describe('a connection pointing at the gateway itself', () => {
  it('is refused at dial time: one request, one attempt, a clear upstream error', async () => {
    const p = await loopingConnection('Loop direct', gw.serve.httpUrl);
    const before = await attempts('UpstreamError');
    const r = await firstAnswer(p.api_key);
    expect(r, 'the request never answered: a request storm').not.toBeNull();
    expect(r!.status, r!.text).toBe(502);
    expect(r!.json?.error).toMatchObject({
      type: 'upstream_error',
      message: "upstream destination refused: the connection's origin is not an allowed destination",
    });
    // Not retried against the same origin (SPEC 7.3), and nothing goes on after the answer.
    await sleep(500);
    expect(await attempts('UpstreamError')).toBe(before + 1);
  });
});

describe('a loop through an address the gateway cannot know (a forwarding proxy)', () => {
  it('the request that comes back is refused by its hop mark: two requests in all, one 400', async () => {
    const p = await loopingConnection('Loop proxied', proxyUrl);
    proxied = 0;
    const before = await attempts('UpstreamStatus');
    const r = await firstAnswer(p.api_key);
    expect(r, 'the request never answered: a request storm').not.toBeNull();
    await sleep(500);
    expect(proxied).toBe(1);
    expect(await attempts('UpstreamStatus')).toBe(before + 1);
    // The refusal of the inner request surfaces as the upstream's own 4xx (SPEC 7.1): no retry.
    expect(r!.status, r!.text).toBe(400);
    expect(r!.json?.error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringContaining('already passed through this gateway'),
    });
  });
});

describe('the hop mark (SPEC 7.1, 7.2 envelopes)', () => {
  let hop: string;
  let apiKey: string;

  beforeAll(async () => {
    const p = await project('Marked');
    apiKey = p.api_key;
    const r = await call(gw.serve.httpUrl, 'POST', '/api/provider-keys', {
      token: gw.admin,
      body: {
        org_id: gw.boot.org_id,
        project_id: p.project_id,
        provider: 'openai',
        name: 'primary',
        secret: 'sk-x',
      },
    });
    expect(r.status, r.text).toBe(201);
    fake.reset();
    await eventually(async () => (await chat(apiKey)).status === 200, 15_000, 'the lane serves');
    hop = String(fake.requests.at(-1)?.headers['x-svc-hop'] ?? '');
  });

  it('every upstream call carries it', () => {
    expect(hop).not.toBe('');
  });

  it('a request carrying it is refused on /v1 in the primary envelope, before any upstream call', async () => {
    fake.reset();
    const r = await chat(apiKey, { 'x-svc-hop': hop });
    expect(r.status, r.text).toBe(400);
    expect(r.json?.error).toMatchObject({ type: 'invalid_request_error', code: 'loop_detected' });
    expect(fake.requests).toHaveLength(0);
  });

  it('a request carrying it is refused on /alt in the alternate envelope', async () => {
    fake.reset();
    const r = await call(gw.serve.httpUrl, 'POST', '/alt/v1/messages', {
      token: apiKey,
      apiKeyHeader: true,
      headers: { 'x-svc-hop': hop },
      body: { model: 'gpt-4o', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.json).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('already passed through') },
    });
    expect(fake.requests).toHaveLength(0);
  });

  it("another deployment's mark is not ours: such a request is served", async () => {
    const r = await chat(apiKey, { 'x-svc-hop': 'someone-else' });
    expect(r.status, r.text).toBe(200);
  });
});
