import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/helpers/postgres.js';
import { PostgresEventStore } from '../../../events/postgres/event-store.js';
import { HealthRegistry } from '../../../lib/health.js';
import { makeControlPlane } from '../../../roles/control-plane.js';
import { makeWalletService } from '../../../roles/wallet.js';
import { createHttpServer } from '../server.js';
import { registerWalletRoutes } from '../wallet/routes.js';
import { registerControlPlaneRoutes } from './routes.js';

// The control plane and wallet routes on a real event store: text PostgreSQL refuses (NUL, an
// unpaired surrogate) is a 400 naming the field before anything is stored, and concurrent writes to
// one record never answer 500 (SPEC 4.6, 7.6): a command decided from its own stream alone retries
// its version conflicts; any other answers a conflict with 409.

const ADMIN = 'admin-token-for-control-plane-routes';
const actor = { id: 'admin' };

let db: TestDatabase;
let store: PostgresEventStore;
let app: FastifyInstance;
let ids: { ws: string; org: string; project: string; key: string; definition: string; ingestKey: string };

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresEventStore(db.pool, db.url);
  const cp = makeControlPlane(store, db.pool, Buffer.alloc(32, 7));
  const wallet = makeWalletService(store, db.pool, { SVC_WALLET_HOLD_TTL_SECONDS: 3_600 }, null);
  app = await createHttpServer({
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    health: new HealthRegistry(),
    roles: [
      {
        name: 'control-plane',
        http: async (scope) => {
          await registerControlPlaneRoutes(scope, cp, cp.reads, ADMIN);
          await registerWalletRoutes(
            scope,
            { commands: wallet, ledger: wallet.reads, controlPlane: cp.reads },
            ADMIN,
          );
        },
      },
    ],
  });
  const { workspace_id: ws } = await cp.createWorkspace(actor, 'Routes');
  const { org_id: org } = await cp.createOrganization(actor, ws, 'Routes org');
  const { project_id: project } = await cp.createProject(actor, org, 'Routes project');
  const { api_key_id: key } = await cp.createApiKey(actor, project, 'routes key');
  const { definition_id: definition } = await cp.defineDimension(actor, ws, 'team', undefined);
  const { id: ingestKey } = await cp.createTraceIngestKey(actor, project, 'routes ingest');
  ids = { ws, org, project, key, definition, ingestKey };
}, 60_000);
afterAll(async () => {
  await app?.close();
  await store?.close();
  await db?.drop();
});

const send = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload: string) =>
  app.inject({
    method,
    url,
    payload,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
  });

const statuses = (answers: { statusCode: number }[]) => {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.statusCode] = (out[a.statusCode] ?? 0) + 1;
  return out;
};

describe('text PostgreSQL cannot store is refused with 400 naming the field (SPEC 7.6)', () => {
  it('a NUL in a project body, an unpaired surrogate in a grant key, a NUL in a connection secret', async () => {
    const cases: [string, string, string][] = [
      ['/api/projects', '{"org_id":"\\u0000","name":"x"}', 'org_id'],
      [
        `/api/workspaces/${ids.ws}/wallet/grants`,
        '{"amount_usd":"1.5","reason":"r","idempotency_key":"a\\udfffb"}',
        'idempotency_key',
      ],
      [
        '/api/provider-keys',
        `{"org_id":"${ids.org}","project_id":"${ids.project}","provider":"openai","name":"n","secret":"sk\\u0000"}`,
        'secret',
      ],
      [`/api/workspaces/${ids.ws}/reporting-dimensions`, '{"key":"team\\ud800"}', 'key'],
    ];
    for (const [url, body, param] of cases) {
      const r = await send('POST', url, body);
      expect({ status: r.statusCode, error: r.json().error, param: r.json().param }, url).toEqual({
        status: 400,
        error: 'bad_request',
        param,
      });
    }
    const r = await send('PATCH', `/api/projects/${ids.project}%00/tracing`, '{"enabled":true}');
    expect({ status: r.statusCode, param: r.json().param }).toEqual({ status: 400, param: 'project_id' });
  });
});

describe('concurrent writes to one record (STYLE.md rule 4)', () => {
  const burst = (n: number, request: (i: number) => ReturnType<typeof send>) =>
    Promise.all(Array.from({ length: n }, (_, i) => request(i)));

  it('30 concurrent tracing switches, spend caps and dimension assignments all succeed', async () => {
    const tracing = await burst(30, (i) =>
      send('PATCH', `/api/projects/${ids.project}/tracing`, JSON.stringify({ enabled: i % 2 === 0 })),
    );
    expect(statuses(tracing)).toEqual({ 200: 30 });
    const caps = await burst(30, (i) =>
      send('PUT', `/api/projects/${ids.project}/spend-cap`, JSON.stringify({ monthly_usd: String(100 + i) })),
    );
    expect(statuses(caps)).toEqual({ 200: 30 });
    const assignments = await burst(30, (i) =>
      send(
        'PUT',
        `/api/api-keys/${ids.key}/reporting-dimensions`,
        JSON.stringify({ definition_id: ids.definition, value: `v${i % 3}` }),
      ),
    );
    expect(statuses(assignments)).toEqual({ 200: 30 });
    const keyTracing = await burst(30, (i) =>
      send('PATCH', `/api/api-keys/${ids.key}/tracing`, JSON.stringify({ enabled: i % 2 === 1 })),
    );
    expect(statuses(keyTracing)).toEqual({ 200: 30 });
  }, 60_000);

  it("20 concurrent definitions and member additions on one workspace's stream all succeed", async () => {
    const definitions = await burst(20, (i) =>
      send(
        'POST',
        `/api/workspaces/${ids.ws}/reporting-dimensions`,
        JSON.stringify({ key: `cost_centre_${i}` }),
      ),
    );
    expect(statuses(definitions)).toEqual({ 201: 20 });
    const members = await burst(20, (i) =>
      send(
        'POST',
        `/api/workspaces/${ids.ws}/members`,
        JSON.stringify({ email: `member-${i}@routes.test`, role: 'member' }),
      ),
    );
    expect(statuses(members)).toEqual({ 201: 20 });
  }, 60_000);

  it('a rotation (it hands back the secret it decided on) answers a lost race 409, never 500', async () => {
    const rotations = await burst(12, () =>
      send('POST', `/api/trace-ingest-keys/${ids.ingestKey}/rotate`, '{}'),
    );
    const seen = statuses(rotations);
    expect(Object.keys(seen).filter((s) => s !== '200' && s !== '409')).toEqual([]);
    expect(seen[200]).toBeGreaterThan(0);
  }, 60_000);
});
