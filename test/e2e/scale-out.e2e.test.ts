import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../fakes/clickhouse-http.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// With URLs set, `svc serve` uses the scale-out adapters (PostgreSQL server,
// ClickHouse over HTTP) and /healthz reports each; a dependency going down turns it 503.

let db: TestDatabase;
let clickhouse: FakeClickHouse;
let dataDir: string;
let chDir: string;
let serve: ServeProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'svc-scale-'));
  chDir = await mkdtemp(join(tmpdir(), 'svc-ch-'));
  await chmod(dataDir, 0o755);
  clickhouse = await startFakeClickHouse({ path: chDir });
  serve = await startServe({
    SVC_DATA_DIR: dataDir,
    SVC_DATABASE_URL: db.url,
    SVC_CLICKHOUSE_URL: clickhouse.url,
  });
});
afterAll(async () => {
  await serve?.stop();
  await clickhouse?.close();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(chDir, { recursive: true, force: true });
});

describe('scale-out adapters', () => {
  it('reports ClickHouse over HTTP in /healthz and created the svc database there', async () => {
    const res = await fetch(`${serve.httpUrl}/healthz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
    expect(body.dependencies.analytics?.status).toBe('up');
    const dbs = await fetch(
      `${clickhouse.url}/?query=${encodeURIComponent("SELECT name FROM system.databases WHERE name = 'svc' FORMAT JSONEachRow")}`,
    );
    expect(await dbs.text()).toContain('"svc"');
  });

  it('answers 503 naming analytics once ClickHouse is gone', async () => {
    await clickhouse.close();
    const res = await fetch(`${serve.httpUrl}/healthz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
    expect(body.dependencies.analytics?.status).toBe('down');
    expect(body.dependencies.postgres?.status).toBe('up');
  });
});
