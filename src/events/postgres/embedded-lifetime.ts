import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Who stops the embedded PostgreSQL, and when ("no embedded PostgreSQL
 * outlives its service").
 *
 * The state file names one process answerable for stopping the server (`ownerPid`). A process that
 * starts the server owns it; one that finds it running while its owner is gone (a `svc serve`
 * killed with -9, a container stop that reached only node) takes ownership, so a restarted service
 * stops the server it adopted.
 *
 * At close a process stops the server when it is answerable (it is the owner, or the owner is
 * gone) and no other svc process is still connected: a short-lived command that started the server
 * leaves it to a `svc serve` that came up meanwhile, and a `svc serve` leaves it to a command that
 * is still running; whoever closes last stops it, because by then the owner is gone. A process
 * whose owner is alive never stops the server, so a command run beside a `svc serve` cannot take
 * the database from under it. Only sessions named `svc*` (every pool and LISTEN client of ours)
 * count: a psql left open does not keep the server alive after the service stops.
 */

export interface EmbeddedPostgresHandle {
  url: string;
  /**
   * True when this process started the server or took it over from an owner that is gone; it
   * then stops it at close unless another process still uses it (the rule above).
   */
  owned: boolean;
  clusterDir: string;
  stop(): Promise<void>;
}

/** `<data dir>/postgres.json`: how every `svc` command finds the data dir's server. */
export interface StateFile {
  port: number;
  password: string;
  /** Where the cluster lives: `<data dir>/postgres`, or the root fallback of embedded.ts. */
  clusterDir?: string;
  /** The process answerable for stopping the server; absent in state files written before it. */
  ownerPid?: number;
}

/** Null when there is none; a state file that does not parse throws, as it always did. */
export const readStateSync = (stateFile: string): StateFile | null => {
  let text: string;
  try {
    text = readFileSync(stateFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return JSON.parse(text) as StateFile;
};

/** Replaces the state file whole, so that a concurrent reader never parses half of it. */
export const writeState = async (stateFile: string, state: StateFile): Promise<void> => {
  const temp = `${stateFile}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(state), { mode: 0o600 });
  await rename(temp, stateFile);
};

const HAS_PROC = existsSync('/proc/self/stat');

/**
 * False for a pid that is gone or a zombie. A zombie matters: an orphaned server is re-parented
 * to PID 1, and when PID 1 is node in a container nobody reaps it, so `kill(pid, 0)` keeps
 * succeeding after it has exited. A dead owner's pid reused by another process reads as alive; the
 * server then waits for that process to end before a later `svc` takes it over.
 */
export const processAlive = (pid: number | undefined): boolean => {
  if (!pid || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (!HAS_PROC) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
};

/**
 * True when the state file names this process as owner, or names one that is gone. A state file
 * that cannot be read (removed with its data dir) names nobody: the server is ours to stop.
 */
const answerable = (stateFile: string): boolean => {
  let owner: number | undefined;
  try {
    owner = readStateSync(stateFile)?.ownerPid;
  } catch {
    return true;
  }
  return owner === process.pid || !processAlive(owner);
};

/**
 * The postmaster of a server this process did not start, from the first line of the cluster's
 * postmaster.pid. On Linux the pid must still run a postgres of this cluster: a stale file and a
 * reused pid must not make us signal an unrelated process.
 */
const postmasterOf = (clusterDir: string): number | null => {
  let pid: number;
  try {
    pid = Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
  if (!processAlive(pid)) return null;
  if (!HAS_PROC) return pid;
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return args.includes(clusterDir) ? pid : null;
  } catch {
    return null;
  }
};

/** SIGINT is PostgreSQL's fast shutdown: roll back open transactions, checkpoint, exit. */
const signalFastShutdown = (pid: number): void => {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    // Already gone.
  }
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Fast shutdown of a postmaster that is not our child: we can only watch its pid. */
const stopPostmaster = async (pid: number, timeoutMs = 15_000): Promise<void> => {
  signalFastShutdown(pid);
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Exited meanwhile.
      }
      return;
    }
    await sleep(50);
  }
};

/**
 * Whether a session of another svc process is still connected. Our own sessions, closed just
 * before, take a few milliseconds to leave pg_stat_activity, so a non-zero count is asked again for
 * up to `graceMs` before it counts.
 */
const othersConnected = async (adminUrl: string, graceMs = 2_000): Promise<boolean> => {
  const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  c.on('error', () => {});
  try {
    await c.connect();
    const deadline = Date.now() + graceMs;
    for (;;) {
      const { rows } = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
            AND application_name LIKE 'svc%'`,
      );
      if (rows[0]?.n === 0) return false;
      if (Date.now() > deadline) return true;
      await sleep(50);
    }
  } catch {
    // Unreachable: the server is stopping or gone, so nobody is left to lose it.
    return false;
  } finally {
    await c.end().catch(() => {});
  }
};

/** Fast shutdown of our own child; its 'exit' event is reliable where a pid is not. */
const stopServer = (child: ChildProcess, timeoutMs = 15_000) =>
  new Promise<void>((resolveStop) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolveStop();
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolveStop();
    });
    child.kill('SIGINT');
  });

/**
 * The handle's stop() and the process exit hook, both by the rule at the top of this file. `server`
 * is our child when we started it; an adopted server is found by its postmaster.pid.
 */
export const lifetime = (h: {
  url: string;
  adminUrl: string;
  owned: boolean;
  clusterDir: string;
  stateFile: string;
  server: ChildProcess | null;
}): EmbeddedPostgresHandle => {
  const postmaster = () => (h.server ? (h.server.pid ?? null) : postmasterOf(h.clusterDir));
  // Synchronous: by 'exit' the event loop is gone, and PostgreSQL completes a fast shutdown alone.
  const onExit = () => {
    const pid = postmaster();
    if (pid && answerable(h.stateFile)) signalFastShutdown(pid);
  };
  process.on('exit', onExit);
  let stopping: Promise<void> | null = null;
  const stop = async () => {
    process.off('exit', onExit);
    if (!answerable(h.stateFile)) return;
    if (await othersConnected(h.adminUrl)) {
      // Theirs to stop now: our pid in the state file will be gone when they close. Our child
      // must not hold this process's event loop open.
      h.server?.unref();
      h.server?.stdout?.destroy();
      h.server?.stderr?.destroy();
      return;
    }
    if (h.server) return stopServer(h.server);
    const pid = postmaster();
    if (pid) await stopPostmaster(pid);
  };
  return {
    url: h.url,
    owned: h.owned,
    clusterDir: h.clusterDir,
    stop: () => {
      stopping ??= stop();
      return stopping;
    },
  };
};
