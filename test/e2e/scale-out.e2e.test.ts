import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../fakes/clickhouse-http.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startS3Server, TEST_S3_CREDENTIALS, type TestS3Server } from '../helpers/s3-server.js';
import { runSvc, type ServeProcess, startServe } from '../helpers/svc-process.js';

// With URLs set, `svc serve` uses the scale-out adapters (PostgreSQL server, ClickHouse over HTTP,
// an S3-compatible object store) and /healthz reports each; a dependency going down turns it 503.

let db: TestDatabase;
let clickhouse: FakeClickHouse;
let dataDir: string;
let chDir: string;
let serve: ServeProcess;
let s3: TestS3Server;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'svc-scale-'));
  chDir = await mkdtemp(join(tmpdir(), 'svc-ch-'));
  await chmod(dataDir, 0o755);
  clickhouse = await startFakeClickHouse({ path: chDir });
  s3 = await startS3Server();
  env = {
    SVC_DATA_DIR: dataDir,
    SVC_DATABASE_URL: db.url,
    SVC_CLICKHOUSE_URL: clickhouse.url,
    SVC_OBJECT_STORE: 's3',
    SVC_S3_ENDPOINT: s3.endpoint,
    SVC_S3_BUCKET: s3.bucket,
    SVC_S3_ACCESS_KEY_ID: TEST_S3_CREDENTIALS.accessKeyId,
    SVC_S3_SECRET_ACCESS_KEY: TEST_S3_CREDENTIALS.secretAccessKey,
    SVC_S3_PREFIX: 'svc',
    // Audit batches seal within a second, so the test sees an archive land in the bucket.
    SVC_AUDIT_BATCH_MAX_AGE_MS: '500',
    SVC_ADMIN_TOKEN: 'admin-scale-out-test-token',
  };
  serve = await startServe(env);
});
afterAll(async () => {
  await serve?.stop();
  await clickhouse?.close();
  await s3?.close();
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

  it('keeps objects in the S3-compatible bucket: an audit archive lands there under the org (issue 26)', async () => {
    const health = (await (await fetch(`${serve.httpUrl}/healthz`)).json()) as {
      dependencies: Record<string, { status: string }>;
    };
    expect(health.dependencies.objects?.status).toBe('up');
    const boot = await runSvc(
      ['bootstrap', '--workspace', 'S3', '--org', 'S3 Org', '--project', 'S3', '--json'],
      env,
    );
    expect(boot.code).toBe(0);
    const deadline = Date.now() + 30_000;
    let keys: string[] = [];
    while (Date.now() < deadline) {
      keys = await s3.keysOnDisk('svc/');
      if (keys.some((k) => /audit/.test(k))) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(keys.filter((k) => /audit/.test(k)).length).toBeGreaterThan(0);
    expect(await readdir(dataDir)).not.toContain('objects');
  }, 60_000);

  it('answers 503 naming the object store once the bucket is gone', async () => {
    await s3.close();
    const res = await fetch(`${serve.httpUrl}/healthz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
    expect(body.dependencies.objects?.status).toBe('down');
  }, 30_000);

  it('answers 503 naming analytics once ClickHouse is gone', async () => {
    await clickhouse.close();
    const res = await fetch(`${serve.httpUrl}/healthz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
    expect(body.dependencies.analytics?.status).toBe('down');
    expect(body.dependencies.postgres?.status).toBe('up');
  });
});
