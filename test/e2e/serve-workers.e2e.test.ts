import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-upstream.js';
import { eventually } from '../helpers/gateway-env.js';
import { grpcClient } from '../helpers/grpc.js';
import { leftoversAfter, leftoversUnder } from '../helpers/leftovers.js';
import { missingRows } from '../helpers/outside.js';
import {
  runSvc,
  type ServeProcess,
  SVC_BIN,
  startServe,
  svcJson,
  upsertFakeGpt4o,
} from '../helpers/svc-process.js';

// Issue 26 item 2: `svc serve --workers 2` on the embedded default. The HTTP roles serve from two
// processes on one port, the data roles from the supervisor's one data process, whose embedded
// analytics engine answers both workers' query roles; a worker killed with -9 is started again in
// its slot; SIGTERM drains them all and leaves no process behind.

let dataDir: string;
let env: Record<string, string>;
let fake: FakeOpenAI;
let serve: ServeProcess | null = null;
let boot: { org_id: string; project_id: string; api_key: string };
let lastRefusal = '';
const admin = `admin-${randomBytes(12).toString('hex')}`;

const svc = svcJson(() => env);

const chat = (text: string) =>
  fetch(`${serve!.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${boot.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }], max_tokens: 8 }),
    signal: AbortSignal.timeout(15_000),
  });

const scrape = async (): Promise<string> => {
  const res = await fetch(`${serve!.httpUrl}/metrics`, {
    headers: { connection: 'close' },
    signal: AbortSignal.timeout(15_000),
  });
  return res.text();
};

const label = (line: string, name: string): string | undefined =>
  new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1];

/** The workers one scrape names, whichever worker answered it (each answers for all): slot -> pid. */
const workersSeen = async (): Promise<Map<string, string>> => {
  const seen = new Map<string, string>();
  for (const line of (await scrape()).split('\n'))
    if (line.startsWith('svc_serve_worker{')) seen.set(label(line, 'slot')!, label(line, 'pid')!);
  return seen;
};

/** GET /healthz answered so far, by worker. */
const healthzByWorker = async (): Promise<Map<string, number>> => {
  const counts = new Map<string, number>();
  for (const line of (await scrape()).split('\n'))
    if (
      line.startsWith('svc_http_request_duration_seconds_count{') &&
      label(line, 'route') === '/healthz' &&
      label(line, 'status') === '200'
    ) {
      const worker = label(line, 'worker')!;
      counts.set(worker, (counts.get(worker) ?? 0) + Number(line.split(' ').at(-1)));
    }
  return counts;
};

const startLine = (): Record<string, unknown> =>
  JSON.parse(
    serve!
      .output()
      .split('\n')
      .find((l) => l.includes('"http_url"'))!,
  ) as Record<string, unknown>;

beforeAll(async () => {
  dataDir = await realpath(await mkdtemp(join(tmpdir(), 'svc-workers-')));
  await chmod(dataDir, 0o755);
  env = {
    SVC_DATA_DIR: dataDir,
    SVC_DATABASE_URL: '',
    SVC_ADMIN_TOKEN: admin,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_LOG_LEVEL: 'warn',
  };
  fake = await startFakeOpenAI();
  serve = await startServe(env, ['--workers', '2'], 90_000);
  boot = (await svc([
    'bootstrap',
    '--workspace',
    'Workers',
    '--org',
    'Workers Org',
    '--project',
    'W',
  ])) as never;
  await upsertFakeGpt4o(svc, fake.url);
  await svc([
    'connections',
    'create',
    '--project',
    boot.project_id,
    '--provider',
    'openai',
    '--name',
    'primary',
    '--secret',
    'sk-x',
  ]);
  // Both workers must have seen the registry and the key: several answers in a row.
  await eventually(
    async () => {
      for (let i = 0; i < 6; i++) {
        const res = await chat('warm up');
        const text = await res.text();
        if (res.status !== 200) {
          lastRefusal = `${res.status} ${text.slice(0, 300)}`;
          return false;
        }
      }
      return true;
    },
    30_000,
    'both workers serve the project',
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last answer: ${lastRefusal}`);
  });
}, 150_000);

afterAll(async () => {
  await serve?.stop('SIGKILL');
  for (const p of leftoversUnder(dataDir)) {
    try {
      process.kill(p.pid, p.kind === 'svc' ? 'SIGKILL' : 'SIGINT');
    } catch {}
  }
  await leftoversAfter(dataDir, 15_000);
  await fake?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('svc serve --workers 2 (issue 26)', () => {
  it('names two worker processes and one data process in its start-up line', () => {
    const line = startLine();
    const workers = line.workers as number[];
    expect(workers).toHaveLength(2);
    expect(new Set(workers).size).toBe(2);
    expect(workers).not.toContain(serve!.child.pid);
    expect(line.data_process).toMatchObject({ roles: ['ingest', 'projector', 'audit'] });
    expect(line.roles).toEqual(expect.arrayContaining(['gateway', 'query', 'ingest', 'projector']));
  });

  it('answers from both workers on the one port; /healthz of each sees the data process', async () => {
    const seen = await workersSeen();
    expect([...seen.keys()].sort()).toEqual(['0', '1']);
    // Every family of every worker, the ones an aggregate would leave out included.
    const text = await scrape();
    expect(text.match(/^process_start_time_seconds\{[^}]*worker="\d"[^}]*\} /gm)).toHaveLength(2);
    expect(text.match(/^# TYPE svc_http_request_duration_seconds /gm)).toHaveLength(1);
    expect(new Set(seen.values())).toEqual(new Set((startLine().workers as number[]).map(String)));
    const before = await healthzByWorker();
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${serve!.httpUrl}/healthz`, { headers: { connection: 'close' } });
      expect(res.status).toBe(200);
      await res.text();
    }
    // Each worker took some of the connections, and one scrape counts every worker's answers.
    const after = await healthzByWorker();
    const took = ['0', '1'].map((w) => (after.get(w) ?? 0) - (before.get(w) ?? 0));
    expect(took[0]! + took[1]!).toBeGreaterThanOrEqual(40);
    expect(Math.min(...took)).toBeGreaterThan(0);
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${serve!.httpUrl}/healthz`, { headers: { connection: 'close' } });
      const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
      expect(res.status).toBe(200);
      expect(body.dependencies['data-process']?.status).toBe('up');
      expect(body.dependencies.analytics?.status).toBe('up');
    }
    // The gRPC port is shared the same way (SPEC 4.8: a probe on a fresh channel each time).
    const grpcPort = startLine().grpc_port as number;
    for (let i = 0; i < 4; i++) {
      const client = grpcClient(grpcPort, 'grpc/health/v1/health.proto', 'grpc.health.v1.Health');
      try {
        expect(await client.call<{ status: string }>('Check', { service: '' })).toEqual({
          status: 'SERVING',
        });
      } finally {
        client.close();
      }
    }
  });

  it('records every request either worker answered once, read back through either worker (SPEC 2.5, 6)', async () => {
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = 0; i < 5; i++) {
          const res = await chat(`worker test ${w}.${i}`);
          expect(res.status).toBe(200);
          await res.text();
          ids.push(res.headers.get('x-svc-request-id')!);
        }
      }),
    );
    expect(new Set(ids).size).toBe(30);
    // The query role of each worker reads the data process's engine through the supervisor.
    expect(await missingRows({ admin, serve: serve! }, boot.org_id, ids, 30_000)).toEqual([]);
  }, 60_000);

  it('starts a worker killed with -9 again in its slot, while the other serves', async () => {
    const victim = Number((await workersSeen()).get('1'));
    expect(victim).toBeGreaterThan(0);
    process.kill(victim, 'SIGKILL');
    // The other worker answers meanwhile: a connection to the dead one fails, the next one works.
    let answered = 0;
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = Date.now();
      const res = await chat(`during restart ${i}`).catch((err: Error) => {
        outcomes.push(`${err.message} ${Date.now() - t0}ms`);
        return null;
      });
      if (res?.status === 200) answered++;
      if (res) outcomes.push(`${res.status} ${Date.now() - t0}ms`);
      await res?.text();
    }
    // No request waits on the dead worker: each one is answered, or refused at once.
    expect(outcomes.filter((o) => /timeout/.test(o))).toEqual([]);
    expect(answered).toBeGreaterThanOrEqual(8);
    await eventually(
      async () => {
        const pid = (await workersSeen()).get('1');
        return pid !== undefined && Number(pid) !== victim;
      },
      30_000,
      'slot 1 serves again from a new process',
    );
    expect(serve!.output()).toMatch(/worker exited; starting it again/);
  }, 60_000);

  it('stops every worker, the data process and the embedded PostgreSQL on SIGTERM', async () => {
    const code = await serve!.stop('SIGTERM');
    serve = null;
    expect(code).toBe(0);
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 60_000);
});

describe('--workers on the command line', () => {
  /** `svc serve --roles gateway` with two workers on the embedded default, in its own process group. */
  const spawnWorkers = () => {
    // A gateway alone runs one worker per core by default; two here whatever the machine has.
    const child = spawn(process.execPath, [SVC_BIN, 'serve', '--json', '--roles', 'gateway'], {
      env: { ...process.env, ...env, SVC_SERVE_WORKERS: '2', SVC_HTTP_PORT: '0', SVC_GRPC_PORT: '0' },
      stdio: 'pipe',
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const started = async () => {
      await eventually(async () => out.includes('"http_url"'), 90_000, 'the gateway workers serve');
      return JSON.parse(out.split('\n').find((l) => l.includes('"http_url"'))!) as { workers: number[] };
    };
    return { child, exited, started, output: () => out };
  };

  it('stops on Ctrl-C (SIGINT to the process group): one request, every process drains, none is left', async () => {
    const s = spawnWorkers();
    expect((await s.started()).workers).toHaveLength(2);
    process.kill(-s.child.pid!, 'SIGINT');
    expect(await s.exited).toBe(0);
    expect(s.output()).not.toMatch(/second signal|timed out|"level":50/);
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 120_000);

  it('stops on SIGTERM while a worker is being started again: the new worker stops too, in time', async () => {
    const s = spawnWorkers();
    const { workers } = await s.started();
    process.kill(workers[1]!, 'SIGKILL');
    // The slot starts again after a second; the stop lands while its worker is starting.
    await new Promise((r) => setTimeout(r, 1_300));
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.output()).toMatch(/worker exited; starting it again/);
    expect(s.output()).not.toMatch(/timed out|did not stop in time/);
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 120_000);

  it('a SIGTERM during start-up is a stop, not a failure: exit 0, nothing left', async () => {
    const s = spawnWorkers();
    await new Promise((r) => setTimeout(r, 2_500));
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.output()).not.toMatch(/"error"|svc: /);
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 120_000);

  it('refuses a count that is not a whole number from 1 to 256', async () => {
    const r = await runSvc(['serve', '--workers', 'many'], { SVC_DATA_DIR: dataDir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--workers must be a whole number from 1 to 256, or auto/);
  });
});
