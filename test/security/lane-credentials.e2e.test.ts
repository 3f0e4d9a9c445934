import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptSecret } from '../../src/lib/crypto.js';
import { type FakeBedrock, startFakeBedrock } from '../fakes/bedrock-runtime.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { call } from '../helpers/outside.js';

// Credentials are per lane, not per adapter (SPEC 4.7 "a second lane ... has
// its own credentials, prices and import history"), and a named connection other than primary is
// routed only when a selector targets it (SPEC 5). Two lanes of the openai adapter and two lanes of
// the bedrock adapter (two regions, each its own fake runtime that verifies every SigV4 signature
// against its own key pair and region) behind one `svc serve`.

const EAST = {
  accessKeyId: 'AKIAEASTEASTEAST0001',
  secretAccessKey: 'east-secret-key-0000000000000000000000',
};
const WEST = {
  accessKeyId: 'AKIAWESTWESTWEST0002',
  secretAccessKey: 'west-secret-key-0000000000000000000000',
};

let openai: FakeOpenAI;
let east: FakeBedrock;
let west: FakeBedrock;
let gw: GatewayEnv;
/** A project with BYOK connections (the bootstrap project runs on platform keys and its wallet). */
let byok: { project_id: string; org_id: string; workspace_id: string; api_key: string };

const chat = (model: string, apiKey = gw.boot.api_key) =>
  call(gw.serve.httpUrl, 'POST', '/v1/chat/completions', {
    token: apiKey,
    body: { model, messages: [{ role: 'user', content: 'which key?' }], max_tokens: 8 },
  });

const messages = (model: string, apiKey: string) =>
  call(gw.serve.httpUrl, 'POST', '/alt/v1/messages', {
    token: apiKey,
    apiKeyHeader: true,
    body: { model, max_tokens: 8, messages: [{ role: 'user', content: 'which key?' }] },
  });

/** The bearer keys the fake OpenAI upstream saw for one provider model id since `from`. */
const keysSeen = (providerModelId: string, from: number) =>
  openai.requests
    .slice(from)
    .filter((r) => (r.body as { model?: string } | undefined)?.model === providerModelId)
    .map((r) => r.apiKey);

const upsert = (lane: string, adapter: string, model: string, providerModelId: string, baseUrl: string) =>
  gw.svc([
    'registry',
    'upsert',
    '--lane',
    lane,
    '--adapter',
    adapter,
    '--model',
    model,
    '--provider-model-id',
    providerModelId,
    '--base-url',
    baseUrl,
    '--capabilities',
    'chat,streaming,tools',
    '--input-price-per-token',
    '0.000001',
    '--output-price-per-token',
    '0.000002',
  ]);

const bootstrap = async (project: string, workspace = 'Gw') =>
  (await gw.svc([
    'bootstrap',
    '--workspace',
    workspace,
    '--org',
    `${workspace} Org`,
    '--project',
    project,
  ])) as typeof byok;

beforeAll(async () => {
  openai = await startFakeOpenAI();
  east = await startFakeBedrock({ region: 'us-east-1', credentials: EAST });
  west = await startFakeBedrock({ region: 'us-west-2', credentials: WEST });
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'fatal', SVC_GATEWAY_RETRY_BACKOFF_MS: '5' });
  // Two lanes of one adapter serving one canonical model, told apart by their provider model ids.
  await upsert('openai', 'openai', 'gpt-4o', 'gpt-4o-main', openai.url);
  await upsert('openai-eu', 'openai', 'gpt-4o', 'gpt-4o-eu', openai.url);
  // Two regions of the managed runtime: the lane defaults point at each region's own fake.
  await upsert('bedrock', 'bedrock', 'claude-east', 'anthropic.claude-east-v1:0', east.url);
  await upsert('bedrock-west', 'bedrock', 'claude-west', 'anthropic.claude-west-v1:0', west.url);
  await gw.svc(
    ['wallet', 'grant', '--workspace', gw.boot.workspace_id, '--amount', '100.00'].concat([
      '--reason',
      'lane credentials test',
      '--idempotency-key',
      'lanes-1',
    ]),
  );
  byok = await bootstrap('Byok Project');
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await openai?.close();
  await east?.close();
  await west?.close();
});

describe('operator platform keys per lane (SPEC 4.7, 5)', () => {
  it('each openai lane is called with its own platform key; a lane without one keeps the adapter key', async () => {
    // A lane of its own gets its own key; today's configuration is one platform key for the adapter
    // (set last: once the gateway serves with it, it has both).
    await gw.svc([
      'keys',
      'platform',
      'set',
      '--provider',
      'openai',
      '--lane',
      'openai-eu',
      '--secret',
      'sk-platform-eu',
    ]);
    await gw.svc(['keys', 'platform', 'set', '--provider', 'openai', '--secret', 'sk-platform-main']);
    await eventually(async () => (await chat('openai/gpt-4o')).status === 200, 15_000, 'platform keys');
    const from = openai.requests.length;
    const eu = await chat('openai-eu/gpt-4o');
    const main = await chat('openai/gpt-4o');
    expect([eu.status, main.status], `${eu.text.slice(0, 300)} ${main.text.slice(0, 300)}`).toEqual([
      200, 200,
    ]);
    expect(keysSeen('gpt-4o-eu', from)).toEqual(['sk-platform-eu']);
    expect(keysSeen('gpt-4o-main', from)).toEqual(['sk-platform-main']);
  });

  it('a second bedrock region is signed with its own key pair and its own region', async () => {
    const pair = (c: typeof EAST) =>
      JSON.stringify({ access_key_id: c.accessKeyId, secret_access_key: c.secretAccessKey });
    await gw.svc(
      ['keys', 'platform', 'set', '--provider', 'bedrock', '--lane', 'bedrock-west'].concat([
        '--secret',
        pair(WEST),
        '--metadata',
        JSON.stringify({ region: 'us-west-2' }),
      ]),
    );
    await gw.svc(
      ['keys', 'platform', 'set', '--provider', 'bedrock', '--secret', pair(EAST)].concat([
        '--metadata',
        JSON.stringify({ region: 'us-east-1' }),
      ]),
    );
    await eventually(async () => (await chat('claude-east')).status === 200, 15_000, 'bedrock keys');
    east.reset();
    west.reset();
    const w = await chat('claude-west');
    const e = await chat('claude-east');
    expect({ west: w.status, east: e.status }, `${w.text.slice(0, 300)} ${e.text.slice(0, 300)}`).toEqual({
      west: 200,
      east: 200,
    });
    expect(west.violations).toEqual([]);
    expect(east.violations).toEqual([]);
    expect(west.requests.map((r) => r.headers.authorization)).toEqual([
      expect.stringMatching(/Credential=AKIAWESTWESTWEST0002\/\d{8}\/us-west-2\/bedrock\/aws4_request/),
    ]);
    expect(east.requests.map((r) => r.headers.authorization)).toEqual([
      expect.stringMatching(/Credential=AKIAEASTEASTEAST0001\/\d{8}\/us-east-1\/bedrock\/aws4_request/),
    ]);
  });
});

describe('tenant connections per lane and by name (SPEC 5)', () => {
  beforeAll(async () => {
    // Adapter-wide primary (as today), a primary of the eu lane alone (through the HTTP API), and
    // a second named connection that nothing routes to until a selector names it.
    const create = (name: string, secret: string, lane?: string) =>
      gw.svc(
        [
          'connections',
          'create',
          '--project',
          byok.project_id,
          '--provider',
          'openai',
          '--name',
          name,
        ].concat(['--secret', secret], lane ? ['--lane', lane] : []),
      );
    await create('primary', 'sk-tenant-main');
    const eu = await call(gw.serve.httpUrl, 'POST', '/api/provider-keys', {
      token: gw.admin,
      body: {
        org_id: byok.org_id,
        project_id: byok.project_id,
        provider: 'openai',
        lane: 'openai-eu',
        name: 'primary',
        secret: 'sk-tenant-eu',
      },
    });
    expect(eu.status, eu.text).toBe(201);
    expect(eu.json).toMatchObject({ provider: 'openai', lane: 'openai-eu', name: 'primary' });
    await create('team-b', 'sk-tenant-team-b');
    await eventually(
      async () => (await chat('openai:team-b/gpt-4o', byok.api_key)).status === 200,
      15_000,
      'the byok project in the gateway',
    );
  }, 60_000);

  it('each lane uses its own primary connection; the named one is not routed by default', async () => {
    const from = openai.requests.length;
    for (const model of ['openai/gpt-4o', 'openai-eu/gpt-4o', 'gpt-4o']) {
      const r = await chat(model, byok.api_key);
      expect(r.status, `${model}: ${r.text.slice(0, 300)}`).toBe(200);
    }
    // `gpt-4o` alone goes to its first candidate lane (openai) with that lane's primary connection.
    expect(keysSeen('gpt-4o-main', from)).toEqual(['sk-tenant-main', 'sk-tenant-main']);
    expect(keysSeen('gpt-4o-eu', from)).toEqual(['sk-tenant-eu']);
    expect(openai.requests.slice(from).map((r) => r.apiKey)).not.toContain('sk-tenant-team-b');
  });

  it('a selector <lane>:<connection>/<model> routes to the named connection, on both edges', async () => {
    const from = openai.requests.length;
    const primary = await chat('openai:team-b/gpt-4o', byok.api_key);
    const alt = await messages('openai:team-b/gpt-4o', byok.api_key);
    expect([primary.status, alt.status], `${primary.text.slice(0, 300)} ${alt.text.slice(0, 300)}`).toEqual([
      200, 200,
    ]);
    expect(keysSeen('gpt-4o-main', from)).toEqual(['sk-tenant-team-b', 'sk-tenant-team-b']);
  });

  it('an unknown connection is a 404 in the dialect envelope, before any upstream call', async () => {
    const from = openai.requests.length;
    const primary = await chat('openai:nobody/gpt-4o', byok.api_key);
    expect(primary.status).toBe(404);
    expect(primary.json).toMatchObject({
      error: { type: 'invalid_request_error', code: 'unknown_connection', param: 'model' },
    });
    expect((primary.json as { error: { message: string } }).error.message).toMatch(/nobody/);
    const alt = await messages('openai:nobody/gpt-4o', byok.api_key);
    expect(alt.status).toBe(404);
    expect(alt.json).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect((alt.json as { error: { message: string } }).error.message).toMatch(/nobody/);
    // A platform key is no stand-in for a connection the selector named.
    const platform = await chat('openai:team-b/gpt-4o');
    expect(platform.status).toBe(404);
    expect(openai.requests.length).toBe(from);
  });
});

describe('a credential names a lane of its own adapter (SPEC 4.7)', () => {
  it('a connection or platform key naming a lane served by another adapter is a 400 naming the lane', async () => {
    const connection = await call(gw.serve.httpUrl, 'POST', '/api/provider-keys', {
      token: gw.admin,
      body: {
        org_id: byok.org_id,
        project_id: byok.project_id,
        provider: 'anthropic',
        lane: 'openai-eu',
        name: 'primary',
        secret: 'sk-ant-x',
      },
    });
    expect(connection.status, connection.text).toBe(400);
    expect(connection.json).toMatchObject({ param: 'lane', message: expect.stringContaining('openai-eu') });
    const platform = await call(gw.serve.httpUrl, 'PUT', '/api/platform-keys/anthropic', {
      token: gw.admin,
      body: { lane: 'Not A Lane', secret: 'sk-ant-x' },
    });
    expect(platform.status, platform.text).toBe(400);
    expect(platform.json).toMatchObject({ param: 'lane' });
  });
});

describe('connections stored before lanes existed (migration)', () => {
  it("an old-shape ConnectionCreated event (no lane) still serves its adapter's lane, never a second lane at an operator's origin", async () => {
    // An unfunded workspace: until the gateway has the connection, platform keys answer 402.
    const project = await bootstrap('Old Shape Project', 'Old');
    const connectionId = `conn_old${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const masterKey = Buffer.from(gw.env.SVC_MASTER_KEY!, 'hex');
    // Exactly the data today's release writes for `svc connections create`.
    const data = {
      provider: 'openai',
      name: 'primary',
      base_url: null,
      metadata: {},
      secret_ciphertext: encryptSecret(masterKey, 'sk-old-shape', connectionId),
      connection_id: connectionId,
      workspace_id: project.workspace_id,
      org_id: project.org_id,
      project_id: project.project_id,
    };
    await gw.db.pool.query('SELECT * FROM svc_append_events($1, $2, 0, $3)', [
      `connection-${connectionId}`,
      'connection',
      JSON.stringify([
        {
          message_id: randomUUID(),
          type: 'ConnectionCreated',
          data,
          metadata: { actor: 'admin', tenant_id: project.workspace_id },
        },
      ]),
    ]);
    await eventually(
      async () => (await chat('openai/gpt-4o', project.api_key)).status === 200,
      15_000,
      'the old connection in the gateway',
    );
    const from = openai.requests.length;
    const main = await chat('openai/gpt-4o', project.api_key);
    // The second lane has an origin of the operator's and its own platform key: the tenant's key
    // never goes there (SPEC 4.7); the lane's key serves it, wallet-funded, and this wallet is empty.
    const eu = await chat('openai-eu/gpt-4o', project.api_key);
    expect([main.status, eu.status]).toEqual([200, 402]);
    expect(keysSeen('gpt-4o-main', from)).toEqual(['sk-old-shape']);
    expect(keysSeen('gpt-4o-eu', from)).toEqual([]);
  });
});
