import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneReads } from '../../src/projections/control-plane/reads.js';
import { grpcClient } from '../helpers/grpc.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc, type ServeProcess, startServe } from '../helpers/svc-process.js';

// The control plane of SPEC 4.6 and 4.8, over real HTTP, gRPC and the CLI against a running `svc serve`.

let db: TestDatabase;
let serve: ServeProcess;
let dataDir: string;
const ADMIN = `admin-${randomBytes(12).toString('hex')}`;
const env = () => ({
  SVC_DATABASE_URL: db.url,
  SVC_ADMIN_TOKEN: ADMIN,
  SVC_MASTER_KEY: randomBytes(32).toString('hex'),
  SVC_DATA_DIR: dataDir,
});
let fixedEnv: Record<string, string>;

interface Bootstrap {
  workspace_id: string;
  org_id: string;
  project_id: string;
  api_key_id: string;
  api_key: string;
}
let boot: Bootstrap;

const api = async (method: string, path: string, token: string | null, body?: unknown) => {
  const res = await fetch(`${serve.httpUrl}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
};

const svc = async (args: string[]) => {
  const r = await runSvc([...args, '--json'], fixedEnv);
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
};

const BEDROCK_SECRET = {
  access_key_id: 'AKIAEXAMPLEPLAINTEXT1',
  secret_access_key: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLAINTEXT',
};
const AZURE_SECRET = 'azure-api-key-plaintext-0123456789';
const OPENAI_SECRET = 'sk-openai-plaintext-abcdefghijklmnop';

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'svc-cp-'));
  fixedEnv = env();
  serve = await startServe(fixedEnv);
  boot = (await svc([
    'bootstrap',
    '--workspace',
    'Acme',
    '--org',
    'Acme Research',
    '--project',
    'Chatbot',
  ])) as unknown as Bootstrap;
});
afterAll(async () => {
  await serve?.stop();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('bootstrap and API keys', () => {
  it('bootstrap is idempotent by name and mints a key each time', async () => {
    const again = (await svc([
      'bootstrap',
      '--workspace',
      'Acme',
      '--org',
      'Acme Research',
      '--project',
      'Chatbot',
    ])) as unknown as Bootstrap;
    expect(again.workspace_id).toBe(boot.workspace_id);
    expect(again.org_id).toBe(boot.org_id);
    expect(again.project_id).toBe(boot.project_id);
    expect(again.api_key).not.toBe(boot.api_key);
    expect(boot.api_key).toMatch(/^svc_sk_/);
  });

  it('the gateway accepts a live key and answers 401 in the primary envelope otherwise, without x-svc-request-id', async () => {
    const ok = await fetch(`${serve.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${boot.api_key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(ok.status).not.toBe(401);
    for (const auth of [undefined, 'Bearer svc_sk_not-a-real-key', 'Bearer svc_dev_personal-token']) {
      const res = await fetch(`${serve.httpUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...(auth ? { authorization: auth } : {}), 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('x-svc-request-id')).toBeNull();
      const body = (await res.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error.type).toBe('authentication_error');
      expect(body.error.message.length).toBeGreaterThan(0);
    }
  });

  it('a revoked API key is refused by the running gateway within 1 s', async () => {
    const created = await svc(['keys', 'create', '--project', boot.project_id, '--name', 'to-revoke']);
    const call = () =>
      fetch(`${serve.httpUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${created.api_key}`, 'content-type': 'application/json' },
        body: '{}',
      }).then((r) => r.status);
    // The new key reaches the gateway's cache through the same notification path.
    const seenBy = Date.now() + 1_000;
    while ((await call()) === 401 && Date.now() < seenBy) await new Promise((r) => setTimeout(r, 10));
    expect(await call()).not.toBe(401);

    const revoked = await api('DELETE', `/api/api-keys/${created.api_key_id}`, ADMIN);
    expect(revoked.status).toBe(200);
    const start = Date.now();
    while ((await call()) !== 401) {
      expect(Date.now() - start).toBeLessThan(1_000);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(Date.now() - start).toBeLessThan(1_000);
  });

  it('listings never return secrets', async () => {
    const list = await api('GET', `/api/api-keys?project_id=${boot.project_id}`, ADMIN);
    expect(list.status).toBe(200);
    const text = JSON.stringify(list.body);
    expect(text).not.toContain(boot.api_key);
    expect(text).not.toContain('secret_hash');
    expect((list.body.data as { prefix: string }[])[0]!.prefix).toBe(boot.api_key.slice(0, 12));
  });
});

describe('authorization over real HTTP', () => {
  let managerToken: string;
  let memberToken: string;
  let outsiderToken: string;

  beforeAll(async () => {
    const other = await api('POST', '/api/workspaces', ADMIN, { name: 'Other Co' });
    expect(other.status).toBe(201);
    await svc([
      'users',
      'add',
      '--email',
      'mgr@acme.test',
      '--workspace',
      boot.workspace_id,
      '--role',
      'manager',
    ]);
    await svc([
      'users',
      'add',
      '--email',
      'member@acme.test',
      '--workspace',
      boot.workspace_id,
      '--role',
      'member',
    ]);
    await svc([
      'users',
      'add',
      '--email',
      'out@other.test',
      '--workspace',
      other.body.workspace_id as string,
      '--role',
      'manager',
    ]);
    managerToken = (await svc(['sessions', 'issue', '--email', 'mgr@acme.test', '--ttl', '1h'])).token!;
    memberToken = (await svc(['sessions', 'issue', '--email', 'member@acme.test'])).token!;
    outsiderToken = (await svc(['sessions', 'issue', '--email', 'out@other.test'])).token!;
  });

  it('401 without credentials or with an unknown session', async () => {
    expect((await api('GET', '/api/orgs', null)).status).toBe(401);
    const bad = await api('GET', '/api/orgs', 'svc_sess_unknown');
    expect(bad.status).toBe(401);
    expect(bad.body.message).toContain('session');
  });

  it('403 outside scope and for a member doing a manager change', async () => {
    const outside = await api('GET', `/api/projects/${boot.project_id}`, outsiderToken);
    expect(outside.status).toBe(403);
    expect(outside.body.message).toContain('outside your scope');
    const member = await api('POST', '/api/api-keys', memberToken, {
      project_id: boot.project_id,
      name: 'nope',
    });
    expect(member.status).toBe(403);
    expect((await api('GET', `/api/projects/${boot.project_id}`, memberToken)).status).toBe(200);
    expect((await api('POST', '/api/workspaces', managerToken, { name: 'Mine' })).status).toBe(403);
  });

  it('404 for unknown ids', async () => {
    expect((await api('GET', '/api/projects/prj_doesnotexist', managerToken)).status).toBe(404);
    expect((await api('DELETE', '/api/api-keys/key_doesnotexist', ADMIN)).status).toBe(404);
    expect((await api('POST', '/api/trace-ingest-keys/tik_nope/rotate', ADMIN)).status).toBe(404);
  });

  it('400 with a message naming the field', async () => {
    const r = await api('POST', '/api/provider-keys', managerToken, {
      org_id: boot.org_id,
      project_id: boot.project_id,
      provider: 'bedrock',
      name: 'primary',
      secret: JSON.stringify(BEDROCK_SECRET),
      metadata: { region: 'us-east-1/evil' },
    });
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('metadata.region');
    const missing = await api('POST', '/api/projects', managerToken, { org_id: boot.org_id });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain('name');
  });

  it('a manager creates connections; listings and stored rows hold no plaintext secret', async () => {
    const bedrock = await api('POST', '/api/provider-keys', managerToken, {
      org_id: boot.org_id,
      project_id: boot.project_id,
      provider: 'bedrock',
      name: 'primary',
      secret: JSON.stringify(BEDROCK_SECRET),
      metadata: { region: 'us-east-1' },
    });
    expect(bedrock.status).toBe(201);
    const azure = await api('POST', '/api/provider-keys', managerToken, {
      org_id: boot.org_id,
      project_id: boot.project_id,
      provider: 'azure',
      name: 'primary',
      secret: AZURE_SECRET,
      metadata: { resource: 'acme-east', api_version: '2024-06-01', deployments: { 'gpt-4o': 'gpt4o-prod' } },
    });
    expect(azure.status).toBe(201);
    const openai = await api('POST', '/api/provider-keys', managerToken, {
      org_id: boot.org_id,
      project_id: boot.project_id,
      provider: 'openai',
      name: 'primary',
      secret: OPENAI_SECRET,
      base_url: 'https://openai-proxy.example.com',
    });
    expect(openai.status).toBe(201);
    await svc([
      'keys',
      'platform',
      'set',
      '--provider',
      'anthropic',
      '--secret',
      'sk-ant-platform-plaintext-xyz',
    ]);

    const listing = JSON.stringify(
      (await api('GET', `/api/provider-keys?project_id=${boot.project_id}`, managerToken)).body,
    );
    const tik = await api('POST', '/api/trace-ingest-keys', managerToken, {
      project_id: boot.project_id,
      name: 'otel',
    });
    const secrets = [
      BEDROCK_SECRET.access_key_id,
      BEDROCK_SECRET.secret_access_key,
      AZURE_SECRET,
      OPENAI_SECRET,
      'sk-ant-platform-plaintext-xyz',
      boot.api_key,
      tik.body.secret as string,
      managerToken,
    ];
    for (const s of secrets) expect(listing).not.toContain(s);

    // Scan every stored event and every row of every read model.
    const events = await db.pool.query('SELECT data::text || metadata::text AS t FROM svc_events');
    const tables = (
      await db.pool.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'rm_%'",
      )
    ).rows.map((r) => r.tablename);
    const texts = events.rows.map((r) => r.t as string);
    for (const t of tables) {
      const rows = await db.pool.query(`SELECT row_to_json(x)::text AS t FROM ${t} x`);
      texts.push(...rows.rows.map((r) => r.t as string));
    }
    expect(tables.length).toBeGreaterThan(8);
    const haystack = texts.join('\n');
    expect(haystack).toContain('us-east-1');
    for (const s of secrets) expect(haystack).not.toContain(s);
  });
});

describe('trace-ingest keys and dimensions', () => {
  it('a rotated trace-ingest key: the old secret stops working and the new one works', async () => {
    const created = await api('POST', '/api/trace-ingest-keys', ADMIN, {
      project_id: boot.project_id,
      name: 'collector',
    });
    expect(created.status).toBe(201);
    const reads = new ControlPlaneReads(db.pool);
    expect((await reads.verifyTraceIngestSecret(created.body.secret as string))?.project_id).toBe(
      boot.project_id,
    );
    const rotated = await api('POST', `/api/trace-ingest-keys/${created.body.id}/rotate`, ADMIN);
    expect(rotated.status).toBe(200);
    expect(await reads.verifyTraceIngestSecret(created.body.secret as string)).toBeNull();
    expect((await reads.verifyTraceIngestSecret(rotated.body.secret as string))?.project_id).toBe(
      boot.project_id,
    );
    const listing = JSON.stringify(
      (await api('GET', `/api/trace-ingest-keys?project_id=${boot.project_id}`, ADMIN)).body,
    );
    expect(listing).not.toContain(rotated.body.secret as string);
    await api('DELETE', `/api/trace-ingest-keys/${created.body.id}`, ADMIN);
    expect(await reads.verifyTraceIngestSecret(rotated.body.secret as string)).toBeNull();
  });

  it('an end-dated dimension assignment stops applying from its end date', async () => {
    const def = await api('POST', `/api/workspaces/${boot.workspace_id}/reporting-dimensions`, ADMIN, {
      key: 'cost_center',
      description: 'finance',
    });
    expect(def.status).toBe(201);
    expect(def.body.guidance).toMatch(/never put secrets/);
    const put = await api('PUT', `/api/api-keys/${boot.api_key_id}/reporting-dimensions`, ADMIN, {
      definition_id: def.body.definition_id,
      value: 'cc-42',
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject([{ key: 'cost_center', value: 'cc-42' }]);

    const end = new Date(Date.now() + 60_000).toISOString();
    const ended = await api(
      'DELETE',
      `/api/api-keys/${boot.api_key_id}/reporting-dimensions/${def.body.definition_id}?end_at=${encodeURIComponent(end)}`,
      ADMIN,
    );
    expect(ended.status).toBe(200);
    const before = await api(
      'GET',
      `/api/api-keys/${boot.api_key_id}/reporting-dimensions?at=${encodeURIComponent(new Date(Date.parse(end) - 1).toISOString())}`,
      ADMIN,
    );
    expect(before.body.data).toMatchObject([{ value: 'cc-42' }]);
    const after = await api(
      'GET',
      `/api/api-keys/${boot.api_key_id}/reporting-dimensions?at=${encodeURIComponent(end)}`,
      ADMIN,
    );
    expect(after.body.data).toEqual([]);
    const archived = await api(
      'DELETE',
      `/api/workspaces/${boot.workspace_id}/reporting-dimensions/${def.body.definition_id}`,
      ADMIN,
    );
    expect(archived.status).toBe(200);
    expect(archived.body.archived_at).toBeTruthy();
  });
});

describe('gRPC over a real socket', () => {
  it('OrgService, ProjectService, ApiKeyService, ProviderKeyService and AuthService.VerifyApiKey answer', async () => {
    const file = 'svc/controlplane/v1/control_plane.proto';
    const orgs = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.OrgService', ADMIN);
    const listed = await orgs.call<{ orgs: { org_id: string }[] }>('ListOrgs', {
      workspace_id: boot.workspace_id,
    });
    expect(listed.orgs.map((o) => o.org_id)).toContain(boot.org_id);
    const projects = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.ProjectService', ADMIN);
    const p = await projects.call<{ project_id: string; name: string }>('CreateProject', {
      org_id: boot.org_id,
      name: 'Via gRPC',
    });
    expect(p.name).toBe('Via gRPC');
    const keys = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.ApiKeyService', ADMIN);
    const k = await keys.call<{ key: { api_key_id: string }; secret: string }>('CreateApiKey', {
      project_id: p.project_id,
      name: 'grpc',
    });
    expect(k.secret).toMatch(/^svc_sk_/);
    const auth = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.AuthService', ADMIN);
    const deadline = Date.now() + 2_000;
    let verified = await auth.call<{ valid: boolean; project_id: string }>('VerifyApiKey', {
      api_key: k.secret,
    });
    while (!verified.valid && Date.now() < deadline)
      verified = await auth.call('VerifyApiKey', { api_key: k.secret });
    expect(verified).toMatchObject({ valid: true, project_id: p.project_id });
    const pk = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.ProviderKeyService', ADMIN);
    const bad = await pk
      .call('CreateProviderKey', {
        project_id: p.project_id,
        provider: 'azure',
        name: 'primary',
        secret: 'k',
        metadata_json: '{"resource":"a/b","api_version":"1"}',
      })
      .catch((e: grpc.ServiceError) => e);
    expect((bad as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((bad as grpc.ServiceError).details).toContain('metadata.resource');

    const anonymous = grpcClient(serve.grpcPort, file, 'svc.controlplane.v1.OrgService');
    const denied = await anonymous.call('ListOrgs', {}).catch((e: grpc.ServiceError) => e);
    expect((denied as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED);
    for (const c of [orgs, projects, keys, auth, pk, anonymous]) c.close();
  });
});

describe('audit events', () => {
  it('every change emits an audit event on svc.audit.events.<workspace_id> with actor, action and target, never a secret', async () => {
    const { PostgresBus } = await import('../../src/events/postgres/bus.js');
    const bus = new PostgresBus(db.pool, { connectionString: db.url });
    const records: {
      tenant_id: string;
      actor: string;
      action: string;
      target: { type: string; id: string };
      raw: string;
    }[] = [];
    const consumer = await bus.consume(
      'test-audit-reader',
      'svc.audit.events.>',
      async (m) => {
        const raw = Buffer.from(m.data).toString('utf8');
        records.push({ ...(JSON.parse(raw) as Omit<(typeof records)[number], 'raw'>), raw });
        expect(m.subject).toBe(`svc.audit.events.${records.at(-1)!.tenant_id}`);
        await m.ack();
      },
      { ackWaitMs: 5_000, maxDeliveries: 3 },
    );
    const deadline = Date.now() + 10_000;
    const has = (action: string, actor?: string) =>
      records.some((r) => r.action === action && (!actor || r.actor === actor));
    while (
      !(
        has('api_key.revoked', 'admin') &&
        has('trace_ingest_key.rotated') &&
        has('platform_key.set', 'cli')
      ) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await consumer.close();
    await bus.close();
    expect(has('workspace.created', 'cli')).toBe(true);
    expect(has('api_key.created', 'cli')).toBe(true);
    expect(has('api_key.revoked', 'admin')).toBe(true);
    expect(has('connection.created')).toBe(true);
    expect(records.find((r) => r.action === 'project.created')?.tenant_id).toBe(boot.workspace_id);
    expect(records.find((r) => r.action === 'connection.created')?.target.type).toBe('connection');
    const all = records.map((r) => r.raw).join('\n');
    for (const s of [
      boot.api_key,
      BEDROCK_SECRET.secret_access_key,
      BEDROCK_SECRET.access_key_id,
      AZURE_SECRET,
      OPENAI_SECRET,
      'sk-ant-platform-plaintext-xyz',
    ]) {
      expect(all).not.toContain(s);
    }
    expect(all).not.toMatch(/secret_hash|ciphertext|token_hash|@acme\.test/);
  });
});
