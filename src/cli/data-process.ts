import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Channel } from '../analytics/chdb/channel.js';
import type { Config } from '../config/config.js';
import type { DependencyState } from '../lib/health.js';
import type { RoleName } from '../roles/role.js';

/**
 * The data process of `svc serve` (ARCHITECTURE.md "One codebase, one CLI, several roles"): when
 * one `svc serve` runs the gateway beside the background data roles (ingest with its settlement
 * and jobs, the projector), those run in a child process of their own, on the same data dir and
 * database. The gateway's event loop then never waits behind an ingest flush or a projection
 * batch, and the child's heap and the embedded engine's memory are not the gateway's.
 *
 * The child is `svc serve --data-process --roles <roles>`: it opens the data dir's database as any
 * `svc` command does (the embedded server, owned by the parent, is found running), owns the
 * embedded analytics engine when there is one and answers the parent's query role through the IPC
 * channel (analytics/chdb/channel.ts), and serves no port. It runs in a process group of its own
 * so that a terminal's Ctrl-C reaches only the parent, which stops it after its own requests have
 * drained and before the database stops; a child whose parent is gone (IPC disconnect) stops by
 * itself. A child that dies is started again, with a backoff, while the parent serves on.
 */

/** The roles a `svc serve` with the gateway hands to its data process. */
export const DATA_PROCESS_ROLES: readonly RoleName[] = ['ingest', 'projector'];
/**
 * The roles that are split when there is a data process: their routes are served here, and their
 * background work (the audit consumer and sealer) runs in the data process, off the event loop
 * that serves requests. Named in both `here` and `child`.
 */
export const SPLIT_ROLES: readonly RoleName[] = ['audit'];

export const splitRoles = (
  roles: readonly RoleName[],
  setting: Config['SVC_SERVE_DATA_PROCESS'],
): { here: RoleName[]; child: RoleName[] } => {
  const data = roles.filter((r) => DATA_PROCESS_ROLES.includes(r));
  if (setting === 'inline' || data.length === 0 || !roles.includes('gateway'))
    return { here: [...roles], child: [] };
  return {
    here: roles.filter((r) => !DATA_PROCESS_ROLES.includes(r)),
    child: roles.filter((r) => DATA_PROCESS_ROLES.includes(r) || SPLIT_ROLES.includes(r)),
  };
};

/** The roles named here whose background work runs in the data process (SPLIT_ROLES). */
export const backgroundElsewhere = (split: { here: readonly RoleName[]; child: readonly RoleName[] }) =>
  new Set(split.here.filter((r) => split.child.includes(r)));

/** Messages of the parent and its data process besides the analytics channel's. */
const TAG = 'svc.data';
export type ToChild =
  | { tag: typeof TAG; type: 'stop' }
  | { tag: typeof TAG; type: 'health'; id: number }
  | { tag: typeof TAG; type: 'metrics'; id: number }
  | { tag: typeof TAG; type: 'ping'; id: number };
export type FromChild =
  | { tag: typeof TAG; type: 'ready'; pid: number; engineVersion: string | null }
  | { tag: typeof TAG; type: 'failed'; message: string }
  | { tag: typeof TAG; type: 'health'; id: number; dependencies: Record<string, DependencyState> }
  | { tag: typeof TAG; type: 'metrics'; id: number; text: string }
  | { tag: typeof TAG; type: 'pong'; id: number };

export const isDataMessage = <T extends { tag: string }>(m: unknown): m is T =>
  (m as { tag?: unknown } | null)?.tag === TAG;
type Untagged<T> = T extends unknown ? Omit<T, 'tag'> : never;
export const dataMessage = <T extends ToChild | FromChild>(m: Untagged<T>): T => ({ tag: TAG, ...m }) as T;

export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const ASK_TIMEOUT_MS = 2_000;
/** How often the parent pings a ready child, and how long without an answer makes it hung. */
const PING_EVERY_MS = 2_000;
const HUNG_AFTER_MS = 10_000;

export interface DataProcess {
  /** The child's pid while it runs. */
  readonly pid: number | null;
  /** The version of the embedded engine the child owns; null when analytics is a server. */
  readonly engineVersion: string | null;
  /** Called with the child's IPC channel whenever a child is ready, and with null when it goes. */
  onChannel(listener: (channel: Channel | null) => void): void;
  /** The child's dependencies as its own /healthz would report them; throws when it does not answer. */
  health(): Promise<Record<string, DependencyState>>;
  /** The child's metrics in the text exposition format ('' when it does not answer). */
  metrics(): Promise<string>;
  /** Stops the child (its roles drain) and waits for it to exit; no restart afterwards. */
  stop(): Promise<void>;
}

/**
 * Starts the data process and resolves once its roles run. Start-up failure (the child exits or
 * says it failed before it is ready) rejects with the child's reason; `signal` aborts the wait
 * and stops the child.
 */
export const startDataProcess = async (options: {
  config: Config;
  /** The parent's database: the child connects to it rather than adopting an embedded server. */
  databaseUrl: string;
  roles: readonly RoleName[];
  logger: Logger;
  signal?: AbortSignal;
}): Promise<DataProcess> => {
  const { logger } = options;
  const log = logger.child({ data_process: true });
  let child: ChildProcess | null = null;
  let ready = false;
  let stopping = false;
  let engineVersion: string | null = null;
  let nextAsk = 1;
  let restartDelay = RESTART_MIN_MS;
  let restartTimer: NodeJS.Timeout | null = null;
  const listeners: ((channel: Channel | null) => void)[] = [];
  const asks = new Map<number, (m: FromChild) => void>();

  const spawnChild = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const proc = fork(SVC_BIN, ['serve', '--data-process', '--roles', options.roles.join(',')], {
        // Profiling and loader flags of the parent apply to its child as well.
        execArgv: process.execArgv,
        // The URL, not the data dir's embedded server: only the parent answers for stopping it, so a
        // child outliving a killed parent never stops the server a restarted parent adopts.
        env: { ...process.env, SVC_DATABASE_URL: options.databaseUrl },
        detached: true,
        serialization: 'advanced',
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child = proc;
      let started = false;
      proc.on('message', (m: unknown) => {
        if (!isDataMessage<FromChild>(m)) return;
        if (m.type === 'ready') {
          started = true;
          ready = true;
          restartDelay = RESTART_MIN_MS;
          engineVersion = m.engineVersion;
          for (const l of listeners) l(proc as Channel);
          resolve();
        } else if (m.type === 'failed') {
          if (!started) reject(new Error(m.message));
          else log.error({ reason: m.message }, 'data process failed');
        } else {
          asks.get(m.id)?.(m);
        }
      });
      proc.once('exit', (code, sig) => {
        if (child === proc) child = null;
        ready = false;
        for (const l of listeners) l(null);
        if (!started) {
          reject(new Error(`the data process exited during start-up (${sig ?? `code ${code}`})`));
          return;
        }
        if (stopping) return;
        log.error(
          { code, signal: sig, restart_in_ms: restartDelay },
          'data process exited; starting it again',
        );
        restartLater();
      });
    });

  /** A new child after the current delay, which doubles up to RESTART_MAX_MS until one is ready. */
  const restartLater = () => {
    restartTimer = setTimeout(() => {
      restartTimer = null;
      if (stopping) return;
      spawnChild().catch((err: unknown) => {
        // /healthz reports the data process down meanwhile.
        log.error({ err, restart_in_ms: restartDelay }, 'data process did not start again');
        if (!stopping) restartLater();
      });
    }, restartDelay);
    restartDelay = Math.min(restartDelay * 2, RESTART_MAX_MS);
  };

  const exited = (proc: ChildProcess, graceMs: number): Promise<void> =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      const timer = setTimeout(() => {
        log.error({ grace_ms: graceMs }, 'data process did not stop in time; killing it');
        proc.kill('SIGKILL');
      }, graceMs);
      proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  const stop = async () => {
    stopping = true;
    clearInterval(watchdog);
    if (restartTimer) clearTimeout(restartTimer);
    const proc = child;
    if (proc) {
      if (proc.connected) proc.send(dataMessage<ToChild>({ type: 'stop' }), () => {});
      else proc.kill('SIGTERM');
      // The child's own drain is bounded by the same timeout; the margin lets it log and exit (and
      // a forced exit of this process kills it first, below).
      await exited(proc, options.config.SVC_SHUTDOWN_TIMEOUT_MS + 2_000);
    }
    process.off('exit', killChild);
  };

  const ask = <T extends FromChild>(type: 'health' | 'metrics' | 'ping'): Promise<T> => {
    const proc = child;
    if (!proc || !ready || !proc.connected)
      return Promise.reject(new Error('the data process is not running'));
    const id = nextAsk++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        asks.delete(id);
        reject(new Error(`the data process did not answer within ${ASK_TIMEOUT_MS} ms`));
      }, ASK_TIMEOUT_MS);
      asks.set(id, (m) => {
        clearTimeout(timer);
        asks.delete(id);
        resolve(m as T);
      });
      proc.send(dataMessage<ToChild>({ type, id }), (err) => {
        if (!err) return;
        clearTimeout(timer);
        asks.delete(id);
        reject(err);
      });
    });
  };

  // A child that stops answering (wedged, or stopped with SIGSTOP) would hold every query for the
  // statement timeout and keep the engine's path: it is killed, which fails what waits on it at
  // once, and started again like any child that died.
  let answeredAt = Date.now();
  const watchdog = setInterval(() => {
    const proc = child;
    if (!proc || !ready) {
      answeredAt = Date.now();
      return;
    }
    if (Date.now() - answeredAt > HUNG_AFTER_MS) {
      log.error({ pid: proc.pid, silent_ms: Date.now() - answeredAt }, 'data process hung; killing it');
      answeredAt = Date.now();
      proc.kill('SIGKILL');
      return;
    }
    ask('ping').then(
      () => {
        answeredAt = Date.now();
      },
      () => {},
    );
  }, PING_EVERY_MS);
  watchdog.unref();
  // However this process ends (a forced exit after its shutdown timeout, a crash), its child does
  // not outlive it; a child whose parent was killed with -9 leaves on the IPC disconnect.
  const killChild = () => {
    child?.kill('SIGKILL');
  };
  process.on('exit', killChild);

  const abort = () => void stop();
  // A signal that came before the child was forked stops here, before one is.
  if (options.signal?.aborted) {
    await stop();
    options.signal.throwIfAborted();
  }
  options.signal?.addEventListener('abort', abort, { once: true });
  try {
    await spawnChild();
  } catch (err) {
    await stop();
    throw err;
  } finally {
    options.signal?.removeEventListener('abort', abort);
  }
  options.signal?.throwIfAborted();

  return {
    get pid() {
      return (child as ChildProcess | null)?.pid ?? null;
    },
    get engineVersion() {
      return engineVersion;
    },
    onChannel: (listener) => {
      listeners.push(listener);
      if (child && ready) listener(child as Channel);
    },
    health: async () => (await ask<Extract<FromChild, { type: 'health' }>>('health')).dependencies,
    metrics: () =>
      ask<Extract<FromChild, { type: 'metrics' }>>('metrics').then(
        (m) => m.text,
        () => '',
      ),
    stop,
  };
};
