import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, realpath, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { leftoversAfter, leftoversUnder } from '../helpers/leftovers.js';
import { runSvc, SVC_BIN } from '../helpers/svc-process.js';

// Signals and clean shutdown ("no embedded PostgreSQL outlives its
// service"): `svc serve` and `npm start` stop on SIGTERM and SIGINT with the embedded PostgreSQL
// stopped and no process left; a second signal forces the exit without leaving PostgreSQL; a
// restarted service stops the server it adopted from a killed one. One data dir serves every case,
// so the cluster is initialised once.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let dataDir: string;

beforeAll(async () => {
  dataDir = await realpath(await mkdtemp(join(tmpdir(), 'svc-signals-')));
  await chmod(dataDir, 0o755);
});
// A failed case must not leave processes that the next case, or the machine, would trip over. A
// left PostgreSQL gets a fast shutdown: killed, its lock file would refuse the next start.
const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name);
  } catch {
    // Gone meanwhile.
  }
};
const killLeftovers = async () => {
  for (const p of leftoversUnder(dataDir)) signal(p.pid, p.kind === 'svc' ? 'SIGKILL' : 'SIGINT');
  for (const p of await leftoversAfter(dataDir, 15_000)) signal(p.pid, 'SIGKILL');
};
afterEach(killLeftovers);
afterAll(async () => {
  await killLeftovers();
  await rm(dataDir, { recursive: true, force: true });
});

interface Serving {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const env = () => ({
  ...process.env,
  SVC_DATA_DIR: dataDir,
  SVC_DATABASE_URL: '',
  SVC_HTTP_PORT: '0',
  SVC_GRPC_PORT: '0',
  SVC_LOG_LEVEL: 'warn',
});

/**
 * `svc serve --json` in its own process group, as a shell runs a foreground job, so that a test can
 * signal the group the way Ctrl-C in a terminal does. Resolves when `ready` says so.
 */
const serve = (
  ready: (output: string) => boolean,
  extraEnv: NodeJS.ProcessEnv = {},
  args: string[] = [],
): Promise<Serving> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, 'serve', '--json', ...args], {
      env: { ...env(), ...extraEnv },
      stdio: 'pipe',
      detached: true,
    });
    let out = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.on('exit', (code, signal) => r({ code, signal })),
    );
    const serving = { child, output: () => out, exited };
    // Asked on every output and every 10 ms: readiness may be a state of the machine, not a line.
    const poll = setInterval(() => check(), 10);
    const check = () => {
      if (!ready(out)) return;
      clearInterval(poll);
      resolve(serving);
    };
    const onData = (d: Buffer) => {
      out += d.toString();
      check();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((e) => {
      clearInterval(poll);
      reject(new Error(`svc serve exited (${e.code ?? e.signal}) early: ${out}`));
    });
  });

const started = (out: string) => out.includes('"http_url"');
const httpUrlOf = (s: Serving) =>
  (JSON.parse(s.output().split('\n').find(started)!) as { http_url: string }).http_url;

/** What a crash or a failed shutdown prints: Node's unhandled-error banner, or a pino error. */
const crashLines = (out: string) =>
  out
    .split('\n')
    .filter((l) => /Unhandled 'error' event|Emitted 'error' event|uncaught|"level":(50|60)/i.test(l));

/**
 * A request whose body never completes: the graceful stop waits for it (it drains requests), so a
 * second signal or the shutdown timeout is what ends the process.
 */
const holdARequest = async (s: Serving): Promise<Socket> => {
  const url = new URL(httpUrlOf(s));
  const socket = connect(Number(url.port), url.hostname);
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n');
  socket.write('Content-Length: 100\r\n\r\n{"model":');
  // Time for the server to read the headers; it then waits for the rest of the body.
  await new Promise((r) => setTimeout(r, 200));
  return socket;
};

const until = async (condition: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

const postgresUnder = () => leftoversUnder(dataDir).filter((p) => p.kind === 'postgres');

/** The parent pid from /proc (the field after the command name), or 0 once the process is gone. */
const parentOf = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
};

describe('svc serve on SIGTERM and SIGINT', () => {
  it('stops cleanly in 10 consecutive start/stop cycles, signalled at once when ready', async () => {
    for (let cycle = 0; cycle < 10; cycle++) {
      const s = await serve(started);
      // Alternately what `docker stop` and Kubernetes send (SIGTERM to the process) and what Ctrl-C
      // in a terminal sends (SIGINT to the whole foreground process group).
      if (cycle % 2 === 0) s.child.kill('SIGTERM');
      else process.kill(-s.child.pid!, 'SIGINT');
      const exit = await s.exited;
      expect({ cycle, ...exit, crash: crashLines(s.output()) }).toEqual({
        cycle,
        code: 0,
        signal: null,
        crash: [],
      });
      expect(await leftoversAfter(dataDir), `cycle ${cycle}`).toEqual([]);
    }
  }, 150_000);

  it('a signal during start-up stops what has started, the embedded PostgreSQL included', async () => {
    // Signalled once the embedded PostgreSQL runs and before the service is up.
    const s = await serve(() => postgresUnder().length > 0);
    expect(started(s.output())).toBe(false);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    expect(crashLines(s.output())).toEqual([]);
    expect(await leftoversAfter(dataDir)).toEqual([]);
  }, 60_000);

  it('a second signal exits at once, still without leaving the embedded PostgreSQL', async () => {
    const s = await serve(started, { SVC_LOG_LEVEL: 'info', SVC_SHUTDOWN_TIMEOUT_MS: '60000' });
    const held = await holdARequest(s);
    s.child.kill('SIGTERM');
    await until(() => s.output().includes('shutting down'));
    // Past the window in which a repeat of the same signal counts as a duplicate delivery.
    await new Promise((r) => setTimeout(r, 600));
    const second = Date.now();
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(1);
    expect(Date.now() - second).toBeLessThan(5_000);
    expect(s.output()).toContain('second signal: exiting now');
    held.destroy();
    // PostgreSQL was told to stop (fast shutdown) and completes it alone.
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 60_000);

  it('the shutdown timeout exits without leaving the embedded PostgreSQL', async () => {
    const s = await serve(started, { SVC_SHUTDOWN_TIMEOUT_MS: '1000' });
    const held = await holdARequest(s);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(1);
    expect(s.output()).toContain('shutdown timed out');
    held.destroy();
    expect(await leftoversAfter(dataDir, 15_000)).toEqual([]);
  }, 60_000);
});

describe('an adopted embedded PostgreSQL', () => {
  it('a service restarted after kill -9 stops the server it adopted', async () => {
    const first = await serve(started);
    first.child.kill('SIGKILL');
    await first.exited;
    // The scenario: node is gone, its PostgreSQL still runs (the postmaster; the backends of the
    // killed process's sessions end by themselves).
    // The postmaster itself: a process it has just forked carries its command line until the child
    // renames itself, so a child of another PostgreSQL process under the dir is not one.
    const postmasters = () => {
      const all = postgresUnder();
      const pids = new Set(all.map((p) => p.pid));
      return all.filter((p) => p.cmdline.includes(' -D ') && !pids.has(parentOf(p.pid)));
    };
    const orphan = postmasters();
    expect(orphan).toHaveLength(1);

    const second = await serve(started);
    const url = httpUrlOf(second);
    // A command run beside the service uses its server and leaves it running.
    const beside = await runSvc(['projections', '--json'], env());
    expect(beside.code).toBe(0);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(postmasters()).toEqual(orphan);

    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(crashLines(second.output())).toEqual([]);
    expect(await leftoversAfter(dataDir)).toEqual([]);
  }, 90_000);

  it('two services on one data dir: the first to stop leaves the server to the other, which stops it', async () => {
    const first = await serve(started);
    // A gateway-only second process: it opens no analytics, whose files only one process may hold.
    const second = await serve(started, {}, ['--roles', 'gateway']);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect((await fetch(`${httpUrlOf(second)}/healthz`)).status).toBe(200);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(crashLines(first.output() + second.output())).toEqual([]);
    expect(await leftoversAfter(dataDir)).toEqual([]);
  }, 90_000);

  it('a session that is not svc (psql left open) does not keep the server alive', async () => {
    const s = await serve(started);
    const state = JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8')) as {
      port: number;
      password: string;
    };
    const psql = new pg.Client({
      connectionString: `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/svc`,
      application_name: 'psql',
    });
    psql.on('error', () => {});
    await psql.connect();
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    expect(await leftoversAfter(dataDir)).toEqual([]);
    await psql.end().catch(() => {});
  }, 60_000);

  it('a command run alone stops the server it started', async () => {
    const alone = await runSvc(['projections', '--json'], env());
    expect(alone.code).toBe(0);
    expect(await leftoversAfter(dataDir)).toEqual([]);
  }, 60_000);
});

describe('npm start', () => {
  // SIGTERM to npm alone is what `docker stop` sends when npm is PID 1; Ctrl-C in a terminal sends
  // SIGINT to npm, sh and node at once (their process group).
  it.each([
    ['SIGTERM to npm', 'SIGTERM', false],
    ['Ctrl-C (SIGINT to the process group)', 'SIGINT', true],
  ] as const)(
    'stops on %s, leaving no process behind',
    async (_name, signal, group) => {
      const npm = spawn('npm', ['start'], { cwd: ROOT, env: env(), stdio: 'pipe', detached: true });
      let out = '';
      const exited = new Promise<number | null>((r) => npm.on('exit', (code) => r(code)));
      await new Promise<void>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d.toString();
          if (out.includes('svc is serving on')) resolve();
        };
        npm.stdout.on('data', onData);
        npm.stderr.on('data', onData);
        void exited.then((code) => reject(new Error(`npm start exited (${code}) early: ${out}`)));
      });
      if (group) process.kill(-npm.pid!, signal);
      else npm.kill(signal);
      expect(await exited).toBe(0);
      expect(crashLines(out)).toEqual([]);
      expect(await leftoversAfter(dataDir)).toEqual([]);
    },
    60_000,
  );
});
