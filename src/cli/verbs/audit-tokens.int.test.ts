import { Command, type CommanderError } from 'commander';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { registerControlPlaneRoutes } from '../../edges/http/control-plane/routes.js';
import { createHttpServer } from '../../edges/http/server.js';
import { PostgresEventStore } from '../../events/postgres/event-store.js';
import { HealthRegistry } from '../../lib/health.js';
import { type ControlPlane, makeControlPlane } from '../../roles/control-plane.js';
import { controlPlaneTarget, registerAuditTokenVerbs } from './audit-tokens.js';

// `svc audit tokens create|list|revoke` (SPEC 5 audit read tokens) against the control-plane HTTP
// routes of a listening server: the commands as a commander program runs them, --json and human
// output, the server's refusals as one-line errors, and --help on each.

const ADMIN = 'admin-token-for-audit-token-cli';
const cli = { id: 'cli' };

let db: TestDatabase;
let store: PostgresEventStore;
let cp: ControlPlane;
let app: FastifyInstance;
let url: string;
let wsA: string;
let managerB: string;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 5));
  app = await createHttpServer({
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    health: new HealthRegistry(),
    roles: [
      { name: 'control-plane', http: (scope) => registerControlPlaneRoutes(scope, cp, cp.reads, ADMIN) },
    ],
  });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  wsA = (await cp.createWorkspace(cli, 'CLI A')).workspace_id;
  const wsB = (await cp.createWorkspace(cli, 'CLI B')).workspace_id;
  await cp.addUser(cli, 'manager-b@cli.test', { workspaceId: wsB, role: 'manager' });
  managerB = (await cp.issueSession(cli, 'manager-b@cli.test', 3_600_000)).token;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await store?.close();
  await db?.drop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs `svc audit <args>`: what it printed on stdout, and what it threw. */
const run = async (args: string[]): Promise<{ out: string; err: unknown }> => {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  const program = new Command('svc').exitOverride().configureOutput({
    writeOut: (s) => {
      out += s;
    },
    writeErr: () => {},
  });
  registerAuditTokenVerbs(program.command('audit'));
  try {
    await program.parseAsync(['audit', ...args], { from: 'user' });
    return { out, err: null };
  } catch (err) {
    return { out, err };
  } finally {
    vi.restoreAllMocks();
  }
};
const svc = async (args: string[]): Promise<string> => {
  const { out, err } = await run(args);
  if (err) throw err;
  return out;
};
const client = (token = ADMIN) => ['--url', url, '--token', token];

describe('svc audit tokens', () => {
  it('create shows the secret once; list never shows it; revoke answers the revoked token', async () => {
    const created = JSON.parse(
      await svc(['tokens', 'create', '--workspace', wsA, '--name', 'siem', ...client(), '--json']),
    ) as { id: string; secret: string; workspace_id: string; scopes: string[] };
    expect(created).toMatchObject({ workspace_id: wsA, scopes: ['audit:read'] });
    expect(created.secret).toMatch(/^svc_audit_/);
    expect(await cp.reads.verifyAuditToken(created.secret)).toMatchObject({ workspace_id: wsA });

    const listed = await svc(['tokens', 'list', '--workspace', wsA, ...client(), '--json']);
    expect((JSON.parse(listed) as { data: { id: string }[] }).data.map((r) => r.id)).toContain(created.id);
    expect(listed).not.toContain(created.secret);
    const human = await svc(['tokens', 'list', ...client()]);
    expect(human).toContain(created.id);
    expect(human).toContain('audit:read');
    expect(human).not.toContain(created.secret);

    const revoked = JSON.parse(await svc(['tokens', 'revoke', created.id, ...client(), '--json'])) as {
      id: string;
      revoked_at: string | null;
    };
    expect(revoked.id).toBe(created.id);
    expect(revoked.revoked_at).not.toBeNull();
    expect(await cp.reads.verifyAuditToken(created.secret)).toBeNull();
  });

  it('human create output says the token is shown once', async () => {
    const out = await svc(['tokens', 'create', '--workspace', wsA, '--name', 'human', ...client()]);
    expect(out).toMatch(
      /^audit token aut_\S+ for workspace \S+: svc_audit_\S+\n\(the token is shown once; store it now\)\n$/,
    );
  });

  it("the server's refusals are one-line errors: unknown token 404, another workspace's manager 403", async () => {
    await expect(svc(['tokens', 'revoke', 'aut_unknown', ...client()])).rejects.toThrow(
      'control plane answered 404: audit token not found',
    );
    await expect(svc(['tokens', 'list', '--workspace', wsA, ...client(managerB)])).rejects.toThrow(
      'control plane answered 403: this workspace is outside your scope',
    );
    await expect(
      svc([
        'tokens',
        'create',
        '--workspace',
        wsA,
        '--name',
        'x',
        '--url',
        'http://127.0.0.1:1',
        '--token',
        ADMIN,
      ]),
    ).rejects.toThrow('cannot reach the control plane at http://127.0.0.1:1');
  });

  it('every verb has --help naming its options, --json, --url and --token', async () => {
    const options = {
      create: ['--workspace', '--name'],
      list: ['--workspace'],
      revoke: ['<audit_token_id>'],
    };
    for (const [verb, own] of Object.entries(options)) {
      const { out, err } = await run(['tokens', verb, '--help']);
      expect((err as CommanderError).code).toBe('commander.helpDisplayed');
      for (const option of [...own, '--json', '--url', '--token']) expect(out, verb).toContain(option);
    }
    const group = await run(['tokens', '--help']);
    for (const verb of Object.keys(options)) expect(group.out).toContain(verb);
  });

  it('takes --url and --token over the environment, and trims the URL', () => {
    expect(controlPlaneTarget({ url: 'http://cp:1/', token: 'tok' }, {})).toEqual({
      url: 'http://cp:1',
      token: 'tok',
    });
    expect(controlPlaneTarget({ token: 'tok' }, { SVC_CONTROL_PLANE_URL: 'https://cp.example//' })).toEqual({
      url: 'https://cp.example',
      token: 'tok',
    });
  });
});
