import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import { eventually } from '../helpers/gateway-env.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc, type ServeProcess, startServe } from '../helpers/svc-process.js';

/**
 * SPEC 6 from outside: the audit role is killed with SIGKILL while it stores and seals, and started
 * again. Every event is in its tenant's log once, every batch is sealed once, and the export of
 * what was sealed verifies offline.
 */

const TENANT = 'wsp_kill';
const EVENTS = 3_000;

let db: TestDatabase;
let dataDir: string;
let env: Record<string, string>;
let serve: ServeProcess | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'svc-audit-kill-'));
  env = {
    SVC_DATABASE_URL: db.url,
    SVC_ADMIN_TOKEN: `admin-${randomBytes(12).toString('hex')}`,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_DATA_DIR: dataDir,
    SVC_AUDIT_BATCH_MAX_EVENTS: '200',
    SVC_AUDIT_BATCH_MAX_AGE_MS: '300',
    SVC_AUDIT_SEAL_INTERVAL_MS: '50',
  };
}, 60_000);

afterAll(async () => {
  await serve?.stop('SIGKILL');
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const count = async (sql: string) => Number((await db.pool.query(sql, [TENANT])).rows[0].n);

describe('the audit role under kill -9 (SPEC 6)', () => {
  it('loses no event and seals none twice across a SIGKILL mid-batch', async () => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url });
    await bus.ensureStreams();
    // Published before the role starts, each event twice under different message ids.
    const messages = [];
    for (let i = 0; i < EVENTS; i++) {
      const data = canonicalJson({ event_id: `ev_${i}`, tenant_id: TENANT, action: 'test.killed', n: i });
      messages.push({ subject: `svc.audit.events.${TENANT}`, data, messageId: `m_${i}` });
      if (i % 10 === 0) messages.push({ subject: `svc.audit.events.${TENANT}`, data, messageId: `dup_${i}` });
    }
    for (let i = 0; i < messages.length; i += 500) await bus.publishMany(messages.slice(i, i + 500));
    await bus.close();

    serve = await startServe(env, ['--roles', 'audit']);
    await eventually(
      async () => (await count('SELECT count(*) AS n FROM audit_batches WHERE tenant_id = $1')) >= 2,
      60_000,
      'two sealed batches',
    );
    await serve.stop('SIGKILL');
    const sealedAtKill = await count('SELECT sealed_size AS n FROM audit_logs WHERE tenant_id = $1');
    expect(sealedAtKill).toBeLessThan(EVENTS);

    serve = await startServe(env, ['--roles', 'audit']);
    try {
      await eventually(
        async () => (await count('SELECT sealed_size AS n FROM audit_logs WHERE tenant_id = $1')) === EVENTS,
        90_000,
        'every event sealed after the restart',
      );
    } catch (err) {
      const state = await db.pool.query('SELECT size, sealed_size, batches FROM audit_logs');
      throw new Error(
        `${(err as Error).message}: ${JSON.stringify(state.rows)} ${serve.output().slice(-3000)}`,
      );
    }
    expect(await count('SELECT count(*) AS n FROM audit_events WHERE tenant_id = $1')).toBe(EVENTS);
    expect(await count('SELECT count(DISTINCT event_id) AS n FROM audit_events WHERE tenant_id = $1')).toBe(
      EVENTS,
    );
    const batches = await db.pool.query(
      'SELECT batch_no::int, first_index::int, tree_size::int FROM audit_batches WHERE tenant_id = $1 ORDER BY batch_no',
      [TENANT],
    );
    let next = 0;
    for (const [i, b] of batches.rows.entries()) {
      expect(b).toEqual({ batch_no: i + 1, first_index: next, tree_size: b.tree_size });
      next = b.tree_size;
    }
    expect(next).toBe(EVENTS);

    const out = join(dataDir, 'export');
    const r = await runSvc(
      [
        'audit',
        'export',
        '--out',
        out,
        '--url',
        serve.httpUrl,
        '--token',
        env.SVC_ADMIN_TOKEN!,
        '--tenant',
        TENANT,
        '--json',
      ],
      env,
    );
    expect(r.stderr).not.toMatch(/svc:/);
    expect(JSON.parse(r.stdout)).toMatchObject({ tree_size: EVENTS, verified: { ok: true } });
  }, 240_000);
});
