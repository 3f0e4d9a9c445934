import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadService } from '../../src/edges/grpc/server.js';
import { PostgresEventStore } from '../../src/events/postgres/event-store.js';
import { createPool } from '../../src/events/postgres/pool.js';
import { runSvc, type ServeProcess, startServe } from '../helpers/svc-process.js';

// `npm start` on the embedded default serves /healthz and /metrics within 60 s,
// data survives a restart, gRPC HealthService.Ping answers, and bad input exits 1 with one line.

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-e2e-'));
  await chmod(dataDir, 0o755);
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const embeddedUrl = async () => {
  const state = JSON.parse(await readFile(join(dataDir, 'postgres.json'), 'utf8')) as {
    port: number;
    password: string;
  };
  return `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/svc`;
};

describe('svc serve on the embedded default', () => {
  let serve: ServeProcess;

  it('serves /healthz 200 and /metrics within 60 s of start', async () => {
    const started = Date.now();
    serve = await startServe({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' });
    const health = await fetch(`${serve.httpUrl}/healthz`);
    expect(health.status).toBe(200);
    const body = (await health.json()) as {
      status: string;
      dependencies: Record<string, { status: string }>;
    };
    expect(body.status).toBe('ok');
    // The embedded default: Postgres event store and bus, chdb analytics, file object store.
    for (const dep of ['postgres', 'bus', 'analytics', 'objects', 'projector'])
      expect(body.dependencies[dep]?.status, dep).toBe('up');
    const metrics = await fetch(`${serve.httpUrl}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('svc_http_request_duration_seconds');
    expect(Date.now() - started).toBeLessThan(60_000);

    const secrets = await stat(join(dataDir, 'secrets.json'));
    expect(secrets.mode & 0o777).toBe(0o600);
    const state = await stat(join(dataDir, 'postgres.json'));
    expect(state.mode & 0o777).toBe(0o600);
  });

  it('answers gRPC HealthService.Ping over a real socket', async () => {
    const Client = grpc.makeGenericClientConstructor(
      loadService('svc/health/v1/health.proto', 'svc.health.v1.HealthService'),
      'HealthService',
    );
    const client = new Client(`127.0.0.1:${serve.grpcPort}`, grpc.credentials.createInsecure());
    const reply = await new Promise<{
      status: string;
      roles: string[];
      dependencies: { name: string; status: string }[];
    }>((resolve, reject) =>
      (
        client as unknown as Record<
          string,
          (req: object, cb: (err: Error | null, res: never) => void) => void
        >
      ).Ping!({}, (err, res) => (err ? reject(err) : resolve(res))),
    );
    client.close();
    expect(reply.status).toBe('ok');
    expect(reply.roles).toContain('projector');
    expect(reply.dependencies.find((d) => d.name === 'postgres')?.status).toBe('up');
  });

  it('keeps its data across a graceful stop and a restart', async () => {
    const pool = createPool(await embeddedUrl());
    const store = new PostgresEventStore(pool, await embeddedUrl());
    await store.append('probe-restart', 'no_stream', [
      { messageId: 'restart-probe-1', type: 'Probed', data: { n: 42 } },
    ]);
    await pool.end();

    // The projector role catches the catalogue up before the stop.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = await runSvc(['projections', '--json'], { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' });
      const rows = JSON.parse(r.stdout) as { name: string; position: number; head: number }[];
      if (rows.every((p) => p.position === p.head)) break;
      if (Date.now() > deadline) throw new Error(`projector did not catch up: ${r.stdout}`);
      await new Promise((res) => setTimeout(res, 200));
    }

    expect(await serve.stop('SIGTERM')).toBe(0);
    serve = await startServe({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' });
    const pool2 = createPool(await embeddedUrl());
    const events = await new PostgresEventStore(pool2, await embeddedUrl()).readStream('probe-restart');
    const catalogue = await pool2.query('SELECT version FROM rm_streams WHERE stream_id = $1', [
      'probe-restart',
    ]);
    await pool2.end();
    expect(events.events.map((e) => e.data)).toEqual([{ n: 42 }]);
    expect(catalogue.rows).toEqual([{ version: 1 }]);

    // `svc replay` rebuilds the catalogue beside the running service and prints a summary.
    const replay = await runSvc(['replay', 'streams', '--json'], {
      SVC_DATA_DIR: dataDir,
      SVC_DATABASE_URL: '',
    });
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ projection: 'streams', events: 1, version: 1 });
    const human = await runSvc(['replay', 'streams'], { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' });
    expect(human.stdout).toMatch(/^replayed 1 events into streams \(v1\) up to position 1 in [\d.]+s$/m);
    expect(await serve.stop('SIGINT')).toBe(0);
  });
});

describe('bad input', () => {
  it('a malformed environment value is one line on stderr and exit code 1', async () => {
    const r = await runSvc(['config'], { SVC_HTTP_PORT: 'eighty' });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^svc: invalid configuration: SVC_HTTP_PORT: /);
    expect(r.stderr).not.toMatch(/\bat .*\(.*:\d+:\d+\)/);
  });

  it('an unreachable database is one line on stderr and exit code 1', async () => {
    const r = await runSvc(['serve'], {
      SVC_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
      SVC_DATA_DIR: dataDir,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^svc: cannot use PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/none: .*ECONNREFUSED/,
    );
  });

  it('an unknown role is refused by name', async () => {
    const r = await runSvc(['serve', '--roles', 'gateway,teleporter'], { SVC_DATA_DIR: dataDir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('unknown role teleporter');
  });

  it('svc config masks secrets, with --json', async () => {
    const r = await runSvc(['config', '--json'], {
      SVC_ADMIN_TOKEN: 'super-secret-admin-token',
      SVC_DATABASE_URL: 'postgres://app:hunter2@db.internal:5432/svc',
    });
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(r.stdout).not.toContain('super-secret-admin-token');
    expect(r.stdout).not.toContain('hunter2');
    expect(shown.SVC_HTTP_PORT).toBe(8080);
    expect(shown.SVC_DATA_DIR).toBe('./.svc-data');
  });

  it('every command has --help', async () => {
    for (const cmd of ['serve', 'config', 'migrate', 'projections', 'replay']) {
      const r = await runSvc([cmd, '--help']);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toContain('--json');
    }
  });
});
