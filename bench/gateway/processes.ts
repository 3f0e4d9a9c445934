import { type ChildProcess, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chooseEntry, mtimeOf, newestMtime } from '../../bin/entry.js';
import { runSvc, SVC_BIN, startServe } from '../../test/helpers/svc-process.js';
import { benchDatabase } from '../lib/database.js';
import { parseProcStat, processTree } from '../lib/proc.js';
import { SLOW_MODEL, startMockUpstream } from './mock-upstream.js';

/** Undo steps, run newest first whether the bench finished, failed or was interrupted. */
export const cleanupStack = () => {
  type Step = { what: string; run: () => Promise<unknown> };
  const steps: Step[] = [];
  let done: Promise<void> = Promise.resolve();
  return {
    defer: (what: string, run: () => Promise<unknown>) => void steps.push({ what, run }),
    /**
     * Runs the steps deferred so far, newest first, after any cleanup already under way. A second
     * call (the run's end after an interruption) runs those deferred since: what the run started
     * while the first cleanup went on.
     */
    run: (): Promise<void> => {
      const now = steps.splice(0).reverse();
      done = done.then(async () => {
        for (const step of now)
          await step.run().catch((err: unknown) => console.error(`cleanup: ${step.what} failed:`, err));
      });
      return done;
    },
  };
};
export type Cleanup = ReturnType<typeof cleanupStack>;

class BenchInterrupted extends Error {}

/**
 * Ctrl-C, SIGTERM, SIGHUP and a closed output (EPIPE: `| head`) stop a bench. What runs now is
 * cleaned up at once; the bench's flow meets `check()` before its next start-up or load and
 * throws, and its `finally` runs the steps deferred meanwhile (a child spawned but not yet
 * registered), newest first, then exits 130 (`finish`). A flow in the middle of a long load is
 * not waited for past `graceMs`.
 */
export const onInterrupt = (cleanup: Cleanup, graceMs = 30_000) => {
  let why: string | null = null;
  const interrupt = (reason: string) => {
    if (why !== null) return;
    why = reason;
    if (!process.stderr.destroyed) process.stderr.write(`\n${reason}: cleaning up\n`);
    void cleanup.run();
    setTimeout(() => void cleanup.run().finally(() => process.exit(130)), graceMs).unref();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => interrupt(signal));
  // A reader that went away makes every later write fail with EPIPE: stop and clean up instead of
  // dying on the first failed console.log with children and databases left behind.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      interrupt('output closed');
    });
  return {
    check: () => {
      if (why !== null) throw new BenchInterrupted(why);
    },
    /** In the flow's `finally`: the rest of the cleanup, then exit 130 if it was interrupted. */
    finish: async (err?: unknown) => {
      await cleanup.run();
      if (why !== null) process.exit(130);
      if (err !== undefined) throw err;
    },
  };
};

const exitOf = (child: ChildProcess, graceMs: number): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });

export interface Mock {
  origin: string;
  /** 'inline' (in the load generator's own event loop) or 'child pid <n>'. */
  where: string;
}

/**
 * In a child process by default, so the mock never waits behind autocannon's event loop and the
 * direct numbers are not capped by it. BENCH_GATEWAY_MOCK=inline runs it in-process to compare.
 */
export const startMock = async (cleanup: Cleanup, inline: boolean): Promise<Mock> => {
  if (inline) {
    const { server, origin } = await startMockUpstream();
    cleanup.defer('mock upstream', async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });
    return { origin, where: 'inline' };
  }
  const child = fork(fileURLToPath(new URL('./mock-upstream.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  cleanup.defer('mock upstream process', async () => {
    if (child.connected) child.disconnect();
    await exitOf(child, 3_000);
  });
  const origin = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { origin: string }) => resolve(m.origin));
    child.once('exit', (code) => reject(new Error(`mock upstream exited with ${code} before it listened`)));
  });
  return { origin, where: `child pid ${child.pid}` };
};

/** The ceiling row: a bare fastify + undici pass-through to the mock, in its own process. */
export const startBareProxy = async (
  cleanup: Cleanup,
  mockOrigin: string,
): Promise<{ origin: string; pid: number }> => {
  const child = fork(fileURLToPath(new URL('./bare-proxy.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_PROXY_UPSTREAM: mockOrigin },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  cleanup.defer('bare proxy process', async () => {
    if (child.connected) child.disconnect();
    await exitOf(child, 3_000);
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { origin: string }) => resolve({ origin: m.origin, pid: child.pid! }));
    child.once('exit', (code) => reject(new Error(`bare proxy exited with ${code} before it listened`)));
  });
};

export interface BenchGateway {
  httpUrl: string;
  pid: number;
  apiKey: string;
  orgId: string;
  model: string;
  slowModel: string;
  /** 'dist' (compiled, plain node) or 'src' (through tsx). */
  from: 'dist' | 'src';
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `svc serve --json` with node flags of our own (startServe takes none); resolves on its start-up line. */
const spawnServe = (
  env: NodeJS.ProcessEnv,
  nodeArgs: string[],
  args: string[],
): Promise<{ child: ChildProcess; httpUrl: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, SVC_BIN, 'serve', '--json', ...args], {
      env: { ...process.env, SVC_HTTP_PORT: '0', SVC_GRPC_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"http_url"'));
      if (!line) return;
      child.stdout!.off('data', onData);
      // Keep draining, so a chatty process never blocks on a full pipe.
      child.stdout!.resume();
      resolve({ child, httpUrl: (JSON.parse(line) as { http_url: string }).http_url });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.length > 100_000) out = out.slice(-50_000);
    });
    child.once('exit', (code) => reject(new Error(`svc serve exited with ${code}: ${out}`)));
  });

/** Runs `svc <args> --json` against one deployment (its environment) and parses the answer. */
const svcJson =
  (env: NodeJS.ProcessEnv) =>
  async (args: string[]): Promise<Record<string, unknown>> => {
    const r = await runSvc([...args, '--json'], env);
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

/**
 * What a new user does after start-up (the banner of `svc serve` says it): a workspace, org,
 * project and API key, the two bench models on the mock, and the project's own key for the
 * reference provider (BYOK traffic, request records on as the service defaults them).
 */
const provisionBench = async (
  svc: ReturnType<typeof svcJson>,
  mockOrigin: string,
): Promise<{ apiKey: string; orgId: string }> => {
  const boot = await svc([
    'bootstrap',
    '--workspace',
    'Bench',
    '--org',
    'Bench Org',
    '--project',
    'Bench Project',
  ]);
  const upsert = (model: string, providerModelId: string) =>
    svc([
      'registry',
      'upsert',
      '--lane',
      'openai',
      '--adapter',
      'openai',
      '--model',
      model,
      '--provider-model-id',
      providerModelId,
      '--base-url',
      mockOrigin,
      '--capabilities',
      'chat,streaming',
      '--input-price-per-token',
      '0.000001',
      '--output-price-per-token',
      '0.000002',
    ]);
  await upsert('bench-model', 'bench-upstream');
  await upsert('bench-slow-model', SLOW_MODEL);
  await svc([
    'connections',
    'create',
    '--project',
    String(boot.project_id),
    '--provider',
    'openai',
    '--name',
    'primary',
    '--secret',
    'sk-bench-byok',
  ]);
  return { apiKey: String(boot.api_key), orgId: String(boot.org_id) };
};

/**
 * Compiles dist/ unless BENCH_GATEWAY_FROM=src or BENCH_GATEWAY_SKIP_BUILD=1, and says which build
 * `bin/svc.js` will run: it runs dist/ by itself when it is fresh, the sources only when asked, and
 * a skipped build can leave dist/ older than src/, which the report must then say.
 */
export const prepareBuild = async (): Promise<'dist' | 'src'> => {
  const wanted = process.env.BENCH_GATEWAY_FROM === 'src' ? 'src' : 'dist';
  if (wanted === 'dist' && process.env.BENCH_GATEWAY_SKIP_BUILD !== '1') {
    const built = await new Promise<number | null>((resolve) =>
      spawn('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore' }).on('exit', resolve),
    );
    // tsc still emits when a file elsewhere in the tree has a type error; say so, do not stop.
    if (built !== 0)
      console.error('bench: tsc -p tsconfig.build.json reported errors; dist/ was still emitted');
  }
  const fresh =
    chooseEntry({
      distMtime: mtimeOf(join(ROOT, 'dist', 'cli', 'main.js')),
      newestSourceMtime: newestMtime(join(ROOT, 'src')),
    }) === 'dist';
  const from = wanted === 'dist' && fresh ? 'dist' : 'src';
  if (from !== wanted) console.error('bench: dist/ is missing or older than src/; svc runs from src');
  return from;
};

/** The bus of the gateway-alone row: NATS JetStream unless BENCH_GATEWAY_BUS=postgres. */
export const gatewayAloneBus = (): 'nats' | 'postgres' =>
  process.env.BENCH_GATEWAY_BUS === 'postgres' ? 'postgres' : 'nats';

/**
 * A fresh database set up by `svc serve --roles control-plane,projector` (provisioned as above),
 * then `svc serve --roles gateway` alone: the request path a real BYOK customer takes, with request
 * records on, and no other role's memory or CPU in the gateway's figures. Records go to NATS
 * (SVC_TEST_NATS_URL) as in a scale-out deployment, or to the Postgres-table bus of the server
 * database with BENCH_GATEWAY_BUS=postgres; nothing consumes them, and the NATS ones of the bench's
 * org are purged at the end. The set-up process is stopped once the gateway serves.
 */
export const startGateway = async (
  cleanup: Cleanup,
  mockOrigin: string,
  from: 'dist' | 'src',
  options: { nodeArgs: string[]; env: Record<string, string> },
): Promise<BenchGateway> => {
  const db = await benchDatabase('gw');
  cleanup.defer('database', () => db.drop());
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-gw-'));
  cleanup.defer('data dir', () => rm(dataDir, { recursive: true, force: true }));
  const natsUrl = process.env.SVC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
  const env = {
    SVC_DATABASE_URL: db.url,
    SVC_ADMIN_TOKEN: `admin-${randomBytes(12).toString('hex')}`,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    ...(gatewayAloneBus() === 'nats' ? { SVC_NATS_URL: natsUrl } : {}),
  };
  const setup = await startServe(env, ['--roles', 'control-plane,projector']);
  cleanup.defer('svc serve (set-up)', async () => {
    setup.child.kill('SIGTERM');
    await exitOf(setup.child, 15_000);
  });
  const { apiKey, orgId } = await provisionBench(svcJson(env), mockOrigin);
  if (gatewayAloneBus() === 'nats') cleanup.defer('bench records on NATS', () => purgeOrg(natsUrl, orgId));
  const serve = await spawnServe(
    // One process, as the targets it is compared with, unless the caller asks for workers.
    { ...env, SVC_SERVE_WORKERS: '1', ...options.env, ...(from === 'src' ? { SVC_FROM_SOURCE: '1' } : {}) },
    options.nodeArgs,
    ['--roles', 'gateway'],
  );
  cleanup.defer('svc serve (gateway)', async () => {
    serve.child.kill('SIGTERM');
    // A graceful exit writes the CPU profile; a stuck one must not hold the bench.
    await exitOf(serve.child, 15_000);
  });
  const gateway: BenchGateway = {
    httpUrl: serve.httpUrl,
    pid: serve.child.pid!,
    apiKey,
    orgId,
    model: 'bench-model',
    slowModel: 'bench-slow-model',
    from,
  };
  await untilServing(gateway);
  setup.child.kill('SIGTERM');
  await exitOf(setup.child, 15_000);
  return gateway;
};

/** Removes the bench org's messages from the shared NATS server's request and audit streams. */
const purgeOrg = async (natsUrl: string, orgId: string): Promise<void> => {
  const { connect } = await import('nats');
  const nc = await connect({ servers: natsUrl, name: 'svc-bench-cleanup' });
  try {
    const jsm = await nc.jetstreamManager();
    for (const [stream, filter] of [
      ['SVC_REQUESTS', `svc.requests.${orgId}.>`],
      ['SVC_AUDIT', `svc.audit.events.${orgId}`],
    ] as const)
      await jsm.streams.purge(stream, { filter }).then(
        (r) => console.log(`cleanup: purged ${r.purged} bench messages (${filter}) from ${stream}`),
        (err: unknown) => console.error(`cleanup: purging ${filter} from ${stream} failed:`, err),
      );
  } finally {
    await nc.close();
  }
};

/** Variables that point `svc` at servers; the embedded default has none of them. */
const SERVER_VARIABLES = [
  'SVC_DATABASE_URL',
  'SVC_NATS_URL',
  'SVC_CLICKHOUSE_URL',
  'SVC_MASTER_KEY',
  'SVC_ADMIN_TOKEN',
  'SVC_DATA_DIR',
] as const;

export interface DefaultService extends BenchGateway {
  dataDir: string;
  /** From the data dir's secrets.json: the query API's administrator bearer (SPEC 5, 4.5). */
  adminToken: string;
}

/**
 * `npm start` as a new user runs it: `node bin/svc.js serve` with no --roles and no server URL,
 * so every role, the embedded PostgreSQL, chdb analytics and the Postgres-table bus, in a fresh
 * data dir (its secrets generated on first start) on free ports, at the shipped log level. The
 * only difference is `--json`, which changes the start-up summary's format and nothing else.
 * Provisioned through the CLI beside it, as the banner tells a user. On the way out it is stopped
 * with SIGTERM (which stops its PostgreSQL); should it have to be killed, its PostgreSQL is
 * stopped by the pid it wrote, and the data dir goes.
 */
export const startDefault = async (
  cleanup: Cleanup,
  mockOrigin: string,
  from: 'dist' | 'src',
): Promise<DefaultService> => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-default-'));
  cleanup.defer('data dir (npm start)', () => rm(dataDir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(SERVER_VARIABLES.map((name) => [name, undefined])),
    SVC_DATA_DIR: dataDir,
    ...(from === 'src' ? { SVC_FROM_SOURCE: '1' } : {}),
  };
  const serve = await spawnServe(env, [], []);
  cleanup.defer('svc serve (npm start)', async () => {
    serve.child.kill('SIGTERM');
    await exitOf(serve.child, 20_000);
    await stopLeftoverPostgres(join(dataDir, 'postgres'));
  });
  const { apiKey, orgId } = await provisionBench(svcJson(env), mockOrigin);
  const secrets = JSON.parse(await readFile(join(dataDir, 'secrets.json'), 'utf8')) as {
    admin_token: string;
  };
  const service: DefaultService = {
    httpUrl: serve.httpUrl,
    pid: serve.child.pid!,
    apiKey,
    orgId,
    model: 'bench-model',
    slowModel: 'bench-slow-model',
    from,
    dataDir,
    adminToken: secrets.admin_token,
  };
  await untilServing(service);
  return service;
};

/** The embedded cluster's postmaster, when it outlived a killed `svc serve`: a fast shutdown. */
const stopLeftoverPostgres = async (clusterDir: string): Promise<void> => {
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

/** A port nothing listens on now (for servers that take a fixed port, as Portkey's does). */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

export interface Portkey {
  origin: string;
  pid: number;
  version: string;
  /** Headers that route a request to the mock as an OpenAI-compatible upstream. */
  headers: Record<string, string>;
}

/**
 * Portkey's open-source gateway from an install of `@portkey-ai/gateway` in `dir` (bench/README.md
 * says how), started as its package starts it on Node (`node build/start-server.js`) with
 * `--port=<free>` and `--headless` (no console UI), and routed to the mock with its own headers.
 */
export const startPortkey = async (cleanup: Cleanup, dir: string, mockOrigin: string): Promise<Portkey> => {
  const pkg = join(dir, 'node_modules', '@portkey-ai', 'gateway');
  const { version } = JSON.parse(await readFile(join(pkg, 'package.json'), 'utf8')) as { version: string };
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(pkg, 'build', 'start-server.js'), `--port=${port}`, '--headless'],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 100_000) out = out.slice(-50_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  cleanup.defer('portkey', async () => {
    child.kill('SIGTERM');
    await exitOf(child, 5_000);
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`portkey exited with ${child.exitCode}: ${out}`);
    const up = await fetch(`${origin}/`).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`portkey did not listen on ${origin} in 30 s: ${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    origin,
    pid: child.pid!,
    version,
    headers: {
      authorization: 'Bearer sk-bench-byok',
      'content-type': 'application/json',
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': `${mockOrigin}/v1`,
    },
  };
};

/** The gateway's registry and tenancy snapshots follow the writes within about a second. */
const untilServing = async (gw: BenchGateway): Promise<void> => {
  const deadline = Date.now() + 30_000;
  let last = '';
  while (Date.now() < deadline) {
    const res = await fetch(`${gw.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: gw.model, messages: [{ role: 'user', content: 'ping' }] }),
    });
    last = `${res.status} ${await res.text()}`;
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the gateway never answered 200 through the mock; last answer: ${last}`);
};

/** Resident set size in MB, from the kernel's view of the process. */
export const rssMb = async (pid: number): Promise<{ rss: number; peak: number }> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
};

/** CPU time (user + system) a process has used so far. */
export const cpuSeconds = async (pid: number): Promise<number> =>
  parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8')).cpuSeconds;

export interface GatewayMetrics {
  /** MB, from prom-client's default metrics: what of the RSS is V8's heap. */
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** request.completed envelopes by state since start: proof that request records are on. */
  records: { published: number; spooled: number; pending: number };
}

/** The gateway's own view of itself, from its /metrics. */
export const gatewayMetrics = async (httpUrl: string): Promise<GatewayMetrics> => {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const value = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
  };
  const mb = (name: string) => value(name) / 1024 / 1024;
  const records = (state: string) => value(`svc_gateway_request_records_total{state="${state}"}`);
  return {
    heapUsed: mb('nodejs_heap_size_used_bytes'),
    heapTotal: mb('nodejs_heap_size_total_bytes'),
    external: mb('nodejs_external_memory_bytes'),
    records: {
      published: records('published'),
      spooled: records('spooled'),
      pending: value('svc_gateway_request_records_pending'),
    },
  };
};
