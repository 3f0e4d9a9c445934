import { rm } from 'node:fs/promises';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { addOpenAiEndpoint, eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call } from '../helpers/outside.js';
import { selfSignedCertificate } from '../helpers/test-tls.js';

// Tenants can read internal services. A tenant connection could target any
// loopback port (SPEC 4.7 allows loopback HTTP, meant for operators and tests), and the internal
// service's reply came back verbatim in error.message (SPEC 7.3); deployment discovery did the same
// for a GET on any path ending in /deployments; internal HTTPS targets (169.254.169.254, 10.0.0.1,
// metadata.google.internal) were accepted too.
// Guarantee: with SVC_TENANT_PRIVATE_DESTINATIONS at its default (refuse), an upstream a tenant sets
// is refused when written as an internal host (400 naming the field), and a name that resolves to
// an internal address is refused on the address dialled: no request reaches the internal service,
// so nothing of it is echoed. Operator lanes keep SPEC 4.7's loopback rule.
//
// `internal.example.test` stands for a DNS name under the tenant's control that resolves to
// 127.0.0.1 (test/helpers/resolve-to.mjs); an HTTPS service with a certificate for that name
// listens there, so a dial that is not refused is answered (and echoed) exactly as it would be.

const INTERNAL_NAME = 'internal.example.test';
const SECRET = 'INTERNAL-ONLY-0f3c9a credentials of the metadata service';

let internal: Server;
let internalPort: number;
const internalHits: string[] = [];
let certDir: string;
let fake: FakeOpenAI;
let gw: GatewayEnv;

const createConnection = (projectId: string, body: Record<string, unknown>) =>
  call(gw.serve.httpUrl, 'POST', '/api/provider-keys', {
    token: gw.admin,
    body: { org_id: gw.boot.org_id, project_id: projectId, name: 'primary', ...body },
  });

/** Another project of the gateway's org, with its own API key. */
const project = async (name: string) =>
  (await gw.svc(['bootstrap', '--workspace', 'Gw', '--org', 'Gw Org', '--project', name])) as {
    project_id: string;
    api_key: string;
  };

const chat = (apiKey: string) =>
  call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
    token: apiKey,
    body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
  });

beforeAll(async () => {
  const tls = await selfSignedCertificate(INTERNAL_NAME);
  certDir = tls.dir;
  internal = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    internalHits.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(418, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: SECRET, code: 'internal' }, data: SECRET }));
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalPort = (internal.address() as AddressInfo).port;
  fake = await startFakeOpenAI();
  const preload = fileURLToPath(new URL('../helpers/resolve-to.mjs', import.meta.url));
  gw = await startGatewayEnv({
    SVC_TENANT_PRIVATE_DESTINATIONS: 'refuse',
    SVC_GATEWAY_RETRIES: '2',
    SVC_GATEWAY_RETRY_BACKOFF_MS: '5',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`.trim(),
    NODE_EXTRA_CA_CERTS: tls.certFile,
    SVC_TEST_RESOLVE: `${INTERNAL_NAME}=127.0.0.1`,
  });
  // An operator lane on loopback (SPEC 4.7), no connection yet.
  await addOpenAiEndpoint(gw, fake.url, { connection: false });
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  internal?.closeAllConnections();
  await new Promise((resolve) => internal?.close(resolve));
  if (certDir) await rm(certDir, { recursive: true, force: true });
});

describe('tenant connections naming internal hosts are refused at create (SPEC 4.7, 4.6)', () => {
  const refused: [what: string, body: Record<string, unknown>, field: string][] = [
    [
      'cloud metadata address',
      { provider: 'openai', secret: 'sk-x', base_url: 'https://169.254.169.254' },
      'base_url',
    ],
    [
      'private network address',
      { provider: 'openai', secret: 'sk-x', base_url: 'https://10.0.0.1' },
      'base_url',
    ],
    [
      'metadata host name',
      { provider: 'openai', secret: 'sk-x', base_url: 'https://metadata.google.internal' },
      'base_url',
    ],
    [
      'private IPv6 address',
      { provider: 'openai', secret: 'sk-x', base_url: 'https://[fd00::1]' },
      'base_url',
    ],
    [
      'loopback port',
      { provider: 'openai', secret: 'sk-x', base_url: 'http://127.0.0.1:{internal}' },
      'base_url',
    ],
    ['localhost', { provider: 'anthropic', secret: 'sk-x', base_url: 'http://localhost:8080' }, 'base_url'],
    [
      'deployment host under an internal domain',
      {
        provider: 'azure',
        secret: 'k',
        metadata: { resource: 'metadata', domain: 'google.internal', api_version: 'v' },
      },
      'metadata.domain',
    ],
    [
      'loopback project endpoint (deployment discovery)',
      {
        provider: 'azure',
        secret: 'k',
        metadata: {
          resource: 'myres',
          api_version: 'v',
          project_endpoint: 'http://127.0.0.1:9/api/projects/p',
        },
      },
      'metadata.project_endpoint',
    ],
  ];

  it.each(refused)('%s: 400 naming the field, nothing stored', async (_what, body, field) => {
    // The internal service's port is known only once it listens.
    const target = JSON.parse(JSON.stringify(body).replace('{internal}', String(internalPort)));
    const r = await createConnection(gw.boot.project_id, target);
    expect(r.status, r.text).toBe(400);
    expect(r.json).toMatchObject({ error: 'bad_request', param: field });
    expect(String(r.json?.message)).toMatch(
      new RegExp(`^${field.replace('.', '\\.')} must not point at an internal host`),
    );
  });

  it('a public host is accepted', async () => {
    const p = await project('Public');
    const r = await createConnection(p.project_id, {
      provider: 'openai',
      secret: 'sk-x',
      base_url: 'https://api.example.com',
    });
    expect(r.status, r.text).toBe(201);
  });
});

describe('a tenant origin resolving to an internal address is refused when dialled', () => {
  it('chat: a clear upstream error, the internal service never called, nothing of it echoed', async () => {
    const p = await project('Rebinding');
    const created = await createConnection(p.project_id, {
      provider: 'openai',
      secret: 'sk-x',
      base_url: `https://${INTERNAL_NAME}:${internalPort}`,
    });
    // Written as a name, it passes the create check; only the address dialled can tell.
    expect(created.status, created.text).toBe(201);
    let r = await chat(p.api_key);
    // The connection reaches the gateway's snapshot by notification.
    await eventually(async () => {
      r = await chat(p.api_key);
      return r.status !== 503;
    }, 10_000);
    expect(r.text).not.toContain('INTERNAL-ONLY');
    expect(internalHits).toEqual([]);
    expect(r.status, r.text).toBe(502);
    expect(r.json?.error).toMatchObject({
      type: 'upstream_error',
      message: "upstream destination refused: the connection's origin is not an allowed destination",
    });
  });

  it('deployment discovery: refused on both listing surfaces, the internal service never called', async () => {
    const p = await project('Discovery');
    const created = await createConnection(p.project_id, {
      provider: 'azure',
      secret: 'k',
      base_url: `https://${INTERNAL_NAME}:${internalPort}`,
      metadata: {
        resource: 'myres',
        api_version: '2024-10-21',
        project_endpoint: `https://${INTERNAL_NAME}:${internalPort}/internal/admin`,
      },
    });
    expect(created.status, created.text).toBe(201);
    const r = await call(
      gw.serve.httpUrl,
      'POST',
      `/api/provider-keys/${String(created.json?.id)}/discover`,
      {
        token: gw.admin,
        body: {},
      },
    );
    expect(r.text).not.toContain('INTERNAL-ONLY');
    expect(internalHits).toEqual([]);
    expect(r.status, r.text).toBe(502);
    expect(String(r.json?.message)).toContain('upstream destination refused');
  });

  it('an operator lane on loopback still serves a tenant connection that sets no origin (SPEC 4.7)', async () => {
    const p = await project('Lane');
    const created = await createConnection(p.project_id, { provider: 'openai', secret: 'sk-x' });
    expect(created.status, created.text).toBe(201);
    await eventually(async () => (await chat(p.api_key)).status === 200, 10_000, 'the lane serves');
  });
});
