import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runSvc, startServe } from '../../test/helpers/svc-process.js';
import { benchDatabase } from '../lib/database.js';
import { SLOW_MODEL, startMockUpstream } from './mock-upstream.js';

/** Undo steps, run newest first whether the bench finished, failed or was interrupted. */
export const cleanupStack = () => {
  const steps: { what: string; run: () => Promise<unknown> }[] = [];
  let ran = false;
  return {
    defer: (what: string, run: () => Promise<unknown>) => steps.push({ what, run }),
    run: async () => {
      if (ran) return;
      ran = true;
      for (const step of steps.reverse()) {
        await step.run().catch((err: unknown) => console.error(`cleanup: ${step.what} failed:`, err));
      }
    },
  };
};
export type Cleanup = ReturnType<typeof cleanupStack>;

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

export interface BenchGateway {
  httpUrl: string;
  pid: number;
  apiKey: string;
  model: string;
  slowModel: string;
}

/**
 * `svc serve --roles gateway,control-plane,projector` on a fresh database with a bootstrapped
 * project, the two bench endpoints on the mock, and a BYOK connection: the request path a real
 * BYOK customer takes, with request records on as the service defaults them.
 */
export const startGateway = async (
  cleanup: Cleanup,
  mockOrigin: string,
  extraServeEnv: Record<string, string>,
): Promise<BenchGateway> => {
  const db = await benchDatabase('gw');
  cleanup.defer('database', () => db.drop());
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-gw-'));
  cleanup.defer('data dir', () => rm(dataDir, { recursive: true, force: true }));
  const env = {
    SVC_DATABASE_URL: db.url,
    SVC_ADMIN_TOKEN: `admin-${randomBytes(12).toString('hex')}`,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
  };
  const svc = async (args: string[]) => {
    const r = await runSvc([...args, '--json'], env);
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const serve = await startServe({ ...env, ...extraServeEnv }, [
    '--roles',
    'gateway,control-plane,projector',
  ]);
  cleanup.defer('svc serve', async () => {
    serve.child.kill('SIGTERM');
    // A graceful exit writes the CPU profile; a stuck one must not hold the bench.
    await exitOf(serve.child, 15_000);
  });
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
  const gateway: BenchGateway = {
    httpUrl: serve.httpUrl,
    pid: serve.child.pid!,
    apiKey: String(boot.api_key),
    model: 'bench-model',
    slowModel: 'bench-slow-model',
  };
  await untilServing(gateway);
  return gateway;
};

/** The gateway's registry and tenancy snapshots follow the writes within about a second. */
const untilServing = async (gw: BenchGateway): Promise<void> => {
  const deadline = Date.now() + 20_000;
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

/**
 * CPU time (user + system) a process has used so far. /proc counts it in USER_HZ ticks, which are
 * 100 a second on Linux whatever the kernel's own tick rate.
 */
export const cpuSeconds = async (pid: number): Promise<number> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name, which may itself hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

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
  const records = (state: string) => value(`svc_gateway_request_records{state="${state}"}`);
  return {
    heapUsed: mb('nodejs_heap_size_used_bytes'),
    heapTotal: mb('nodejs_heap_size_total_bytes'),
    external: mb('nodejs_external_memory_bytes'),
    records: { published: records('published'), spooled: records('spooled'), pending: records('pending') },
  };
};
