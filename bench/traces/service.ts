import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chooseEntry, mtimeOf, newestMtime } from '../../bin/entry.js';
import { NATS_SERVER_BIN } from '../../test/helpers/nats-server.js';
import { runSvc, SVC_BIN } from '../../test/helpers/svc-process.js';
import type { Cleanup } from '../gateway/processes.js';
import { processTree } from '../lib/proc.js';

/**
 * `svc serve` for bench:traces, as `npm start` runs it: `node bin/svc.js serve` with no --roles and
 * no server URL, so every role, the embedded PostgreSQL, chdb analytics, and the ingest role (with
 * its trace projector) in the data process; on a fresh data dir, free ports, the shipped log level.
 * The JetStream row adds SVC_NATS_URL of a private nats-server (its own store dir, so its streams
 * and durable consumers are this run's alone), and nothing else changes. Provisioned as a user
 * would: `svc bootstrap` beside it, then a trace ingest key under the administrator bearer of the
 * data dir's secrets.json.
 */

export interface BenchService {
  label: string;
  httpUrl: string;
  /** The serving process: the root of the tree whose CPU is counted. */
  pid: number;
  dataDir: string;
  admin: string;
  orgId: string;
  projectId: string;
  workspaceId: string;
  traceKey: string;
  bus:
    | { kind: 'postgres'; url: string }
    | { kind: 'nats'; url: string; storeDir: string; monitorUrl: string; logFile: string };
  /** Everything svc serve (and its data process) wrote; removed at the end unless keepLog() was called. */
  logFile: string;
  keepLog(): void;
  /** `svc <args> --json` against this service. */
  svc(args: string[]): Promise<unknown>;
}

/**
 * What a bin/svc.js will run: its checkout's dist/ when that is fresh, else the sources through tsx
 * (the bench builds nothing; --svc-bin points it at another checkout, e.g. a compiled copy whose
 * CPU profiles name functions and lines, which tsx's one-line output does not).
 */
export const svcEntry = (bin: string = SVC_BIN): 'dist' | 'source' => {
  const root = dirname(dirname(bin));
  return chooseEntry({
    distMtime: mtimeOf(join(root, 'dist', 'cli', 'main.js')),
    newestSourceMtime: newestMtime(join(root, 'src')),
  });
};

/** Variables that point `svc` at servers; the embedded default has none of them. */
const SERVER_VARIABLES = [
  'SVC_DATABASE_URL',
  'SVC_NATS_URL',
  'SVC_CLICKHOUSE_URL',
  'SVC_MASTER_KEY',
  'SVC_ADMIN_TOKEN',
  'SVC_DATA_DIR',
  'SVC_SERVE_DATA_PROCESS',
] as const;

const exitOf = (child: ChildProcess, graceMs: number): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** `svc serve --json` with node flags of our own; resolves on its start-up line. */
const spawnServe = (
  env: NodeJS.ProcessEnv,
  nodeArgs: string[],
  logFile: string,
  bin: string,
): Promise<{ child: ChildProcess; httpUrl: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, bin, 'serve', '--json'], {
      env: { ...process.env, SVC_HTTP_PORT: '0', SVC_GRPC_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(logFile);
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    let out = '';
    const keep = (d: Buffer) => {
      out += d.toString();
      if (out.length > 100_000) out = out.slice(-50_000);
    };
    const onData = (d: Buffer) => {
      keep(d);
      const line = out.split('\n').find((l) => l.includes('"http_url"'));
      if (!line) return;
      child.stdout!.off('data', onData);
      // Keep draining (and keep the tail, for a failure report), so a chatty process never blocks.
      child.stdout!.on('data', keep);
      resolve({ child, httpUrl: (JSON.parse(line) as { http_url: string }).http_url });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', keep);
    child.once('exit', (code) => reject(new Error(`svc serve exited with ${code}: ${out.slice(-4_000)}`)));
  });

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/**
 * A private nats-server with JetStream (as test/helpers/nats-server.ts starts one), with its
 * monitoring port on, so the bench can read slow-consumer counts, and its log kept in a file.
 */
const startNats = async (
  cleanup: Cleanup,
  maxPendingMb: number | undefined,
): Promise<{ url: string; storeDir: string; monitorUrl: string; logFile: string }> => {
  if (!NATS_SERVER_BIN) throw new Error('nats-server is not installed (Debian package nats-server)');
  const storeDir = await mkdtemp(join(tmpdir(), 'svc-bench-traces-nats-'));
  cleanup.defer('nats store dir', () => rm(storeDir, { recursive: true, force: true }));
  const logFile = `${storeDir}.log`;
  const [port, monitor] = [await freePort(), await freePort()];
  // max_pending (bytes queued to one client before the server cuts it off as a slow consumer) has
  // no command-line flag: a config file carries it when --nats-max-pending asks for another value.
  const config = maxPendingMb === undefined ? [] : ['-c', `${storeDir}.conf`];
  if (maxPendingMb !== undefined)
    await writeFile(`${storeDir}.conf`, `max_pending: ${maxPendingMb * 1024 * 1024}\n`);
  cleanup.defer('nats config', () => rm(`${storeDir}.conf`, { force: true }));
  const child = spawn(
    NATS_SERVER_BIN,
    [
      ...config,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '-m',
      String(monitor),
      '-js',
      '-sd',
      storeDir,
      '-l',
      logFile,
    ],
    { stdio: 'ignore' },
  );
  cleanup.defer('private nats-server', async () => {
    child.kill('SIGTERM');
    await exitOf(child, 5_000);
  });
  const monitorUrl = `http://127.0.0.1:${monitor}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`);
    if (
      await fetch(`${monitorUrl}/healthz?js-enabled-only=true`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error('nats-server did not start in 10 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `nats://127.0.0.1:${port}`, storeDir, monitorUrl, logFile };
};

/** The embedded cluster's postmaster, when it outlived a killed `svc serve`: a fast shutdown. */
const stopLeftoverPostgres = async (dataDir: string): Promise<void> => {
  const state = JSON.parse(await readFile(join(dataDir, 'postgres.json'), 'utf8').catch(() => '{}')) as {
    clusterDir?: string;
  };
  const clusterDir = state.clusterDir ?? join(dataDir, 'postgres');
  const pid = Number(
    (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0],
  );
  if (!pid) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await processTree(pid)).size > 0)
    await new Promise((r) => setTimeout(r, 100));
};

/** The data dir's embedded PostgreSQL, as every `svc` command finds it (postgres.json). */
const embeddedUrl = async (dataDir: string): Promise<string> => {
  const s = JSON.parse(await readFile(join(dataDir, 'postgres.json'), 'utf8')) as {
    port: number;
    password: string;
  };
  return `postgres://postgres:${encodeURIComponent(s.password)}@127.0.0.1:${s.port}/svc`;
};

export const startService = async (
  cleanup: Cleanup,
  options: { bus: 'postgres' | 'nats'; nodeArgs: string[]; bin?: string; natsMaxPendingMb?: number },
): Promise<BenchService> => {
  let keep = false;
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-traces-'));
  cleanup.defer('data dir', () => rm(dataDir, { recursive: true, force: true }));
  const logFile = `${dataDir}.log`;
  cleanup.defer('log file', () => (keep ? Promise.resolve() : rm(logFile, { force: true })));
  const nats = options.bus === 'nats' ? await startNats(cleanup, options.natsMaxPendingMb) : null;
  if (nats) cleanup.defer('nats log', () => (keep ? Promise.resolve() : rm(nats.logFile, { force: true })));
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(SERVER_VARIABLES.map((name) => [name, undefined])),
    SVC_DATA_DIR: dataDir,
    ...(nats ? { SVC_NATS_URL: nats.url } : {}),
  };
  const bin = options.bin ?? SVC_BIN;
  const serve = await spawnServe(env, options.nodeArgs, logFile, bin);
  cleanup.defer('svc serve', async () => {
    serve.child.kill('SIGTERM');
    // A graceful exit writes the CPU profiles; a stuck one must not hold the bench.
    await exitOf(serve.child, 30_000);
    await stopLeftoverPostgres(dataDir);
  });
  const svc = async (args: string[]): Promise<Record<string, unknown>> => {
    const r = await runSvc([...args, '--json'], env, 60_000, bin);
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const boot = await svc([
    'bootstrap',
    '--workspace',
    'Bench',
    '--org',
    'Bench Org',
    '--project',
    'Bench Traces',
  ]);
  const { admin_token: admin } = JSON.parse(await readFile(join(dataDir, 'secrets.json'), 'utf8')) as {
    admin_token: string;
  };
  const keyRes = await fetch(`${serve.httpUrl}/api/trace-ingest-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ project_id: boot.project_id, name: 'bench-traces' }),
  });
  if (keyRes.status !== 201)
    throw new Error(`POST /api/trace-ingest-keys answered ${keyRes.status}: ${await keyRes.text()}`);
  const { secret } = (await keyRes.json()) as { secret: string };
  return {
    label: nats ? 'JetStream' : 'embedded',
    httpUrl: serve.httpUrl,
    pid: serve.child.pid!,
    dataDir,
    admin,
    orgId: String(boot.org_id),
    projectId: String(boot.project_id),
    workspaceId: String(boot.workspace_id),
    traceKey: secret,
    bus: nats ? { kind: 'nats', ...nats } : { kind: 'postgres', url: await embeddedUrl(dataDir) },
    logFile,
    keepLog: () => {
      keep = true;
    },
    svc,
  };
};

export interface NatsStats {
  /** Clients the server cut off for not reading fast enough (varz slow_consumers). */
  slowConsumers: number;
  /**
   * Per durable consumer: deliveries beyond the first of each message (its consumer sequence less
   * the last stream sequence delivered: every stream here is one filter's, numbered from 1), and
   * messages not acked yet.
   */
  consumers: { name: string; redeliveries: number; ackPending: number }[];
}

/** What the private nats-server says about the run, from its monitoring port. */
export const natsStats = async (monitorUrl: string): Promise<NatsStats> => {
  const varz = (await (await fetch(`${monitorUrl}/varz`)).json()) as { slow_consumers?: number };
  const jsz = (await (await fetch(`${monitorUrl}/jsz?consumers=true`)).json()) as {
    account_details?: {
      stream_detail?: {
        consumer_detail?: {
          name: string;
          num_ack_pending: number;
          delivered: { consumer_seq: number; stream_seq: number };
        }[];
      }[];
    }[];
  };
  const consumers = (jsz.account_details ?? []).flatMap((a) =>
    (a.stream_detail ?? []).flatMap((s) =>
      (s.consumer_detail ?? []).map((c) => ({
        name: c.name,
        redeliveries: c.delivered.consumer_seq - c.delivered.stream_seq,
        ackPending: c.num_ack_pending,
      })),
    ),
  );
  return { slowConsumers: varz.slow_consumers ?? 0, consumers };
};
