import cluster, { type Worker } from 'node:cluster';
import { lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type Channel, ChannelEngine, serveEngine } from '../analytics/chdb/channel.js';
import type { Config } from '../config/config.js';
import { mergeRecordDirs } from '../events/envelopes/merge.js';
import type { DependencyState } from '../lib/health.js';
import type { RoleName } from '../roles/role.js';
import {
  DATA_PROCESS_ROLES,
  type DataProcess,
  SPLIT_ROLES,
  SVC_BIN,
  startDataProcess,
} from './data-process.js';
import { CliError } from './output.js';
import { type Database, dataDirOf, loadSecrets, openDatabase, ownHttpUrl, type Secrets } from './runtime.js';

/**
 * `svc serve --workers N` (issue 26): the HTTP roles in N processes sharing the HTTP and gRPC ports
 * (node:cluster; the supervisor accepts and hands each connection to a worker in turn), beside one
 * supervisor that owns what there must be one of:
 *
 * - the embedded PostgreSQL when there is no SVC_DATABASE_URL (the workers get its URL);
 * - the data process (cli/data-process.ts) with the data roles, ingest and the projector, however
 *   many workers there are; its embedded analytics engine answers every worker's query role
 *   through the supervisor, which serves the engine it reaches again to each worker;
 * - the restarts: a worker that dies is started again in its slot, with a backoff, while the
 *   others serve on; SIGTERM or SIGINT drains every worker, then stops the data process and the
 *   database.
 *
 * Each worker keeps its own request spool and journal (the gateway's; SPEC 2.5) in a directory of
 * its slot: slot 0 uses the data dir's, as a single process does, slot i `<data dir>/workers/<i>`.
 * A worker started again in a slot adopts and drains what its predecessor left there.
 */

/** The processes of `svc serve`: the flag wins over SVC_SERVE_WORKERS; `auto` is per core for a gateway alone. */
export const workerCount = (
  setting: Config['SVC_SERVE_WORKERS'],
  flag: string | undefined,
  roles: readonly RoleName[],
): number => {
  let value: number | 'auto' = setting;
  if (flag !== undefined) {
    const n = /^\d{1,3}$/.test(flag) ? Number(flag) : Number.NaN;
    if (flag === 'auto') value = 'auto';
    else if (n >= 1 && n <= 256) value = n;
    else throw new CliError(`--workers must be a whole number from 1 to 256, or auto (got ${flag})`);
  }
  if (value !== 'auto') return value;
  return roles.length === 1 && roles[0] === 'gateway' ? usableCores() : 1;
};

/**
 * The cores this process may use: Node counts those of its CPU affinity, not a container's CPU
 * limit (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`), which is what a pod with `limits.cpu: 2` on
 * a 64-core node has. Rounded up, at least 1, at most 256.
 */
export const usableCores = (read: (path: string) => string | null = readOrNull): number => {
  const cores = availableParallelism();
  const quota = cgroupCpuQuota(read);
  return Math.max(1, Math.min(256, quota === null ? cores : Math.min(cores, Math.ceil(quota))));
};

const readOrNull = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** CPUs of the cgroup's quota (2.5 for 250000/100000), or null when it has none. */
export const cgroupCpuQuota = (read: (path: string) => string | null): number | null => {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2.length === 2) {
    const [quota, period] = v2 as [string, string];
    if (quota === 'max') return null;
    const q = Number(quota);
    const p = Number(period);
    return q > 0 && p > 0 ? q / p : null;
  }
  const q = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const p = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  return q > 0 && p > 0 ? q / p : null;
};

/** The roles of the workers and of the supervisor's data process. */
export const workerRoles = (roles: readonly RoleName[]): { http: RoleName[]; data: RoleName[] } => ({
  http: roles.filter((r) => !DATA_PROCESS_ROLES.includes(r)),
  data: roles.some((r) => DATA_PROCESS_ROLES.includes(r))
    ? roles.filter((r) => DATA_PROCESS_ROLES.includes(r) || SPLIT_ROLES.includes(r))
    : [],
});

/** The directory of a worker's own files (RoleContext.processDir). */
export const slotDir = (dataDir: string, slot: number): string =>
  slot === 0 ? dataDir : join(dataDir, 'workers', String(slot));

/**
 * The slots a larger `--workers` ran and this one does not (`workers/<i>` for i >= count): their
 * journals and spool go to a slot that runs, whose worker adopts and drains them as its own.
 */
export const retireSlots = (dataDir: string, count: number, log: Pick<Logger, 'info' | 'warn'>): void => {
  let entries: string[];
  try {
    entries = readdirSync(join(dataDir, 'workers'));
  } catch {
    return;
  }
  for (const name of entries) {
    // A slot's directory is named as slotDir names it, and is a directory: anything else is not ours.
    const slot = /^[1-9]\d{0,2}$/.test(name) ? Number(name) : -1;
    if (slot < count) continue;
    const from = join(dataDir, 'workers', name);
    const into = slotDir(dataDir, slot % count);
    if (!lstatSync(from).isDirectory() || realpathSync(from) === realpathSync(into)) continue;
    const result = mergeRecordDirs(from, into);
    if ('inUse' in result)
      log.warn(
        { slot, journals: result.inUse },
        'a live process still writes in a retired worker slot; left as it is',
      );
    else
      log.info(
        { slot, into: slot % count, ...result.merged },
        "a retired worker slot's records go to a running one",
      );
  }
};

/** Messages between the supervisor and its workers, beside the analytics channel's. */
const TAG = 'svc.worker';
export type ToWorker =
  | { tag: typeof TAG; type: 'stop' }
  /** The worker's metrics as prom-client JSON, for a sibling's /metrics. */
  | { tag: typeof TAG; type: 'collect'; id: number }
  | {
      tag: typeof TAG;
      type: 'answer';
      id: number;
      info?: WorkerInfo;
      dependencies?: Record<string, DependencyState>;
      text?: string;
      /** The other workers' metrics (prom-client JSON), for 'siblings'. */
      json?: unknown[];
      error?: string;
    };
export type FromWorker =
  | { tag: typeof TAG; type: 'ask'; id: number; what: WorkerAsk }
  | { tag: typeof TAG; type: 'collected'; id: number; json: unknown }
  | { tag: typeof TAG; type: 'ready'; started: WorkerStarted }
  | { tag: typeof TAG; type: 'failed'; message: string };

/** info: before start-up; health and metrics: the data process's; siblings: the other workers' metrics. */
export type WorkerAsk = 'info' | 'health' | 'metrics' | 'siblings';

/** What a worker learns from the supervisor before it starts its roles. */
export interface WorkerInfo {
  dataRoles: RoleName[];
  dataPid: number | null;
  /** The version of the engine the data process owns; null when analytics is a server or absent. */
  engineVersion: string | null;
}

/** What a worker reports once it serves. */
export interface WorkerStarted {
  httpPort: number;
  grpcPort: number;
  roles: RoleName[];
  notBuilt: RoleName[];
}

export const isWorkerMessage = <T extends { tag: string }>(m: unknown): m is T =>
  (m as { tag?: unknown } | null)?.tag === TAG;
type Untagged<T> = T extends unknown ? Omit<T, 'tag'> : never;
export const workerMessage = <T extends ToWorker | FromWorker>(m: Untagged<T>): T =>
  ({ tag: TAG, ...m }) as T;

const RESTART_MIN_MS = 1_000;
/** How long a scrape waits for a sibling's metrics; a worker that does not answer is left out. */
const COLLECT_TIMEOUT_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A worker that served this long before it died starts again without waiting. */
const HEALTHY_AFTER_MS = 60_000;

export interface RunningWorkers {
  httpUrl: string;
  httpPort: number;
  grpcPort: number;
  roles: RoleName[];
  notBuilt: RoleName[];
  dataProcess: { roles: RoleName[]; pid: number | null };
  database: Database;
  secrets: Secrets;
  /** The pids of the workers serving now, by slot. */
  workerPids(): (number | null)[];
  stop(): Promise<void>;
}

interface Slot {
  index: number;
  worker: Worker | null;
  /** Whether the current worker reported ready. */
  ready: boolean;
  readyAt: number;
  restartDelay: number;
  timer: NodeJS.Timeout | null;
  unserve: () => void;
}

/**
 * Starts the supervisor's own parts and `count` workers, and resolves once every worker serves.
 * A worker failing during start-up fails the whole start (the others are stopped with it); later a
 * dead worker is started again. `signal` aborts start-up.
 */
export const startWorkers = async (
  config: Config,
  options: { roles: RoleName[]; count: number; logger: Logger; signal?: AbortSignal },
): Promise<RunningWorkers> => {
  const { logger, count } = options;
  const { http, data } = workerRoles(options.roles);
  if (http.length === 0)
    throw new CliError(`--workers runs HTTP roles, and ${options.roles.join(', ')} has none`);
  if (!config.SVC_CLICKHOUSE_URL && data.length === 0 && http.includes('query'))
    throw new CliError(
      'the query role in several workers reads analytics from one place: set SVC_CLICKHOUSE_URL, ' +
        'or run ingest or the projector beside it (their data process owns the embedded engine)',
    );
  const checkpoint = () => options.signal?.throwIfAborted();
  const secrets = await loadSecrets(config);
  checkpoint();
  // The supervisor migrates once; its workers then find the schema current.
  const database = await openDatabase(config, {
    application: 'svc-supervisor',
    poolSize: 1,
    onLog: (line) => logger.debug({ postgres: String(line).trim() }),
  });
  let dataProcess: DataProcess | null = null;
  let engine: ChannelEngine | null = null;
  const slots: Slot[] = [];
  let stopping = false;
  let started: WorkerStarted | null = null;
  const log = logger.child({ supervisor: true });

  const info = (): WorkerInfo => ({
    dataRoles: data,
    dataPid: dataProcess?.pid ?? null,
    engineVersion: dataProcess?.engineVersion ?? null,
  });

  const answer = (
    worker: Worker,
    id: number,
    body: Omit<Extract<ToWorker, { type: 'answer' }>, 'tag' | 'type' | 'id'>,
  ) => {
    if (worker.isConnected()) worker.send(workerMessage<ToWorker>({ type: 'answer', id, ...body }), () => {});
  };

  // A scrape of any worker answers for all of them (each series labelled with its worker), so a
  // scraper behind the shared port sees every counter every time, not whichever worker it hit.
  let nextCollect = 1;
  const collects = new Map<number, (json: unknown) => void>();
  const collectFrom = (slot: Slot): Promise<unknown> => {
    const worker = slot.worker;
    if (!worker || !slot.ready || !worker.isConnected()) return Promise.resolve(null);
    const id = nextCollect++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        collects.delete(id);
        resolve(null);
      }, COLLECT_TIMEOUT_MS);
      collects.set(id, (json) => {
        clearTimeout(timer);
        collects.delete(id);
        resolve(json);
      });
      worker.send(workerMessage<ToWorker>({ type: 'collect', id }), () => {});
    });
  };

  const onAsk = (worker: Worker, id: number, what: WorkerAsk) => {
    if (what === 'info') return answer(worker, id, { info: info() });
    if (what === 'siblings') {
      void Promise.all(slots.filter((s) => s.worker !== worker).map(collectFrom)).then((all) =>
        answer(worker, id, { json: all.filter((j) => j !== null) }),
      );
      return;
    }
    const child = dataProcess;
    if (!child) return answer(worker, id, { error: 'there is no data process' });
    if (what === 'health')
      child.health().then(
        (dependencies) => answer(worker, id, { dependencies }),
        (err: unknown) => answer(worker, id, { error: err instanceof Error ? err.message : String(err) }),
      );
    else void child.metrics().then((text) => answer(worker, id, { text }));
  };

  /** Forks the worker of a slot; resolves when it serves, rejects when it fails or exits first. */
  const fork = (slot: Slot): Promise<WorkerStarted> =>
    new Promise((resolve, reject) => {
      // Every worker accepts on the one listening socket itself. With round-robin the supervisor
      // accepts and hands each connection over, and a connection handed to a worker that dies
      // before taking it stays open in the supervisor, unanswered, until the client gives up.
      cluster.schedulingPolicy = cluster.SCHED_NONE;
      cluster.setupPrimary({
        exec: SVC_BIN,
        args: ['serve', '--worker', String(slot.index), '--roles', http.join(',')],
        execArgv: process.execArgv,
        serialization: 'advanced',
      });
      const worker = cluster.fork({ SVC_DATABASE_URL: database.url });
      slot.worker = worker;
      slot.ready = false;
      if (engine) slot.unserve = serveEngine(worker as unknown as Channel, engine);
      let ready = false;
      worker.on('message', (m: unknown) => {
        if (!isWorkerMessage<FromWorker>(m)) return;
        if (m.type === 'ask') onAsk(worker, m.id, m.what);
        else if (m.type === 'collected') collects.get(m.id)?.(m.json);
        else if (m.type === 'ready') {
          ready = true;
          slot.ready = true;
          slot.readyAt = Date.now();
          // A worker that came up while the others drain stops at once.
          if (stopping) worker.send(workerMessage<ToWorker>({ type: 'stop' }), () => {});
          resolve(m.started);
        } else if (m.type === 'failed' && !ready) reject(new Error(`worker ${slot.index}: ${m.message}`));
      });
      worker.once('exit', (code, sig) => {
        slot.unserve();
        slot.unserve = () => {};
        if (slot.worker === worker) slot.worker = null;
        if (!ready) {
          reject(new Error(`worker ${slot.index} exited during start-up (${sig ?? `code ${code}`})`));
          return;
        }
        if (stopping) return;
        if (Date.now() - slot.readyAt > HEALTHY_AFTER_MS) slot.restartDelay = RESTART_MIN_MS;
        log.error(
          { slot: slot.index, pid: worker.process.pid, code, signal: sig, restart_in_ms: slot.restartDelay },
          'worker exited; starting it again',
        );
        restartLater(slot);
      });
    });

  const restartLater = (slot: Slot) => {
    slot.timer = setTimeout(() => {
      slot.timer = null;
      if (stopping) return;
      fork(slot).then(
        () => log.info({ slot: slot.index, pid: slot.worker?.process.pid }, 'worker serving again'),
        (err: unknown) => {
          log.error(
            { err, slot: slot.index, restart_in_ms: slot.restartDelay },
            'worker did not start again',
          );
          if (!stopping) restartLater(slot);
        },
      );
    }, slot.restartDelay);
    slot.restartDelay = Math.min(slot.restartDelay * 2, RESTART_MAX_MS);
  };

  const exited = (worker: Worker, graceMs: number): Promise<void> =>
    new Promise((resolve) => {
      if (worker.isDead()) return resolve();
      const timer = setTimeout(() => {
        log.error({ pid: worker.process.pid, grace_ms: graceMs }, 'worker did not stop in time; killing it');
        worker.process.kill('SIGKILL');
      }, graceMs);
      worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  // However the supervisor ends (a forced exit, a crash), no worker outlives it; a worker whose
  // supervisor was killed with -9 exits on the IPC disconnect (node:cluster's own handler).
  const killWorkers = () => {
    for (const slot of slots) slot.worker?.process.kill('SIGKILL');
  };
  process.on('exit', killWorkers);

  const stop = async () => {
    stopping = true;
    for (const slot of slots) if (slot.timer) clearTimeout(slot.timer);
    // Every worker drains at once; each is bounded by the same timeout, plus a margin to exit.
    await Promise.all(
      slots.map((slot) => {
        const worker = slot.worker;
        if (!worker) return Promise.resolve();
        // A worker still starting may not listen for messages yet, and Node drops what it is sent:
        // SIGTERM reaches it whatever it is doing (a worker takes a second request as the same one).
        if (worker.isConnected() && slot.ready)
          worker.send(workerMessage<ToWorker>({ type: 'stop' }), () => {});
        else worker.process.kill('SIGTERM');
        return exited(worker, config.SVC_SHUTDOWN_TIMEOUT_MS + 2_000);
      }),
    );
    process.off('exit', killWorkers);
    // After the workers' requests drained (their records are on the bus), before the database.
    await dataProcess?.stop().catch((err: unknown) => log.error({ err }, 'data process stop failed'));
    await engine?.release();
    await database.close();
  };

  try {
    checkpoint();
    if (data.length > 0) {
      const child = await startDataProcess({
        config,
        databaseUrl: database.url,
        roles: data,
        logger,
        signal: options.signal,
      });
      dataProcess = child;
      if (child.engineVersion) {
        const relay = new ChannelEngine(child.engineVersion);
        child.onChannel((channel) => relay.attach(channel));
        engine = relay;
      }
    }
    checkpoint();
    retireSlots(dataDirOf(config), count, log);
    for (let index = 0; index < count; index++)
      slots.push({
        index,
        worker: null,
        ready: false,
        readyAt: 0,
        restartDelay: RESTART_MIN_MS,
        timer: null,
        unserve: () => {},
      });
    const abort = () => {
      for (const slot of slots) slot.worker?.process.kill('SIGTERM');
    };
    options.signal?.addEventListener('abort', abort, { once: true });
    try {
      const reports = await Promise.all(slots.map((slot) => fork(slot)));
      started = reports[0] ?? null;
    } finally {
      options.signal?.removeEventListener('abort', abort);
    }
    checkpoint();
  } catch (err) {
    await stop();
    // A stop asked for during start-up is that, not the failure it caused (a worker cut short).
    if (options.signal?.aborted) throw options.signal.reason;
    throw err;
  }
  const first = started as WorkerStarted;
  return {
    httpUrl: ownHttpUrl(config.SVC_HTTP_HOST, first.httpPort),
    httpPort: first.httpPort,
    grpcPort: first.grpcPort,
    // A worker names the data process's roles beside its own.
    roles: first.roles,
    notBuilt: first.notBuilt,
    dataProcess: {
      roles: data,
      get pid() {
        return dataProcess?.pid ?? null;
      },
    },
    database,
    secrets,
    workerPids: () => slots.map((s) => s.worker?.process.pid ?? null),
    stop,
  };
};
