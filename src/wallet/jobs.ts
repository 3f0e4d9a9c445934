import { type Runner, run, type TaskList, Logger as WorkerLogger } from 'graphile-worker';
import type { Logger } from 'pino';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { expireHolds, reconcileTopUps } from './sweeps.js';

/**
 * The wallet's background jobs on graphile-worker (ARCHITECTURE.md "jobs"): the hold-expiry sweep
 * every minute and top-up reconciliation every five. The worker runs inside the control-plane role
 * (see `walletJobs` below); graphile-worker's cron fires each item once across every process that
 * runs it, so scaling the control plane out does not multiply the jobs.
 */

export const WALLET_TASKS = {
  expireHolds: 'wallet_expire_holds',
  reconcile: 'wallet_reconcile',
} as const;

export const WALLET_CRONTAB = [
  `* * * * * ${WALLET_TASKS.expireHolds}`,
  `*/5 * * * * ${WALLET_TASKS.reconcile}`,
].join('\n');

export interface WalletJobDeps {
  pool: Pool;
  store: EventStore;
  reconcileGraceSeconds: number;
  logger?: Logger;
}

export const walletTaskList = (deps: WalletJobDeps): TaskList => ({
  [WALLET_TASKS.expireHolds]: async () => {
    const expired = await expireHolds(deps);
    if (expired > 0) deps.logger?.info({ expired }, 'wallet holds expired');
  },
  [WALLET_TASKS.reconcile]: async () => {
    const mismatches = await reconcileTopUps(deps, { graceSeconds: deps.reconcileGraceSeconds });
    for (const m of mismatches) deps.logger?.warn({ mismatch: m }, 'wallet.reconciliation.mismatch');
  },
});

/** graphile-worker's log lines into the service's pino logger. */
const workerLogger = (logger: Logger | undefined) =>
  new WorkerLogger(() => (level, message, meta) => {
    if (!logger) return;
    const severity = String(level);
    const log = severity === 'error' ? logger.error : severity === 'warning' ? logger.warn : logger.debug;
    log.call(logger, { jobs: 'wallet', ...(meta ?? {}) }, message);
  });

/** Names the worker's connections in pg_stat_activity, unless the URL names them already. */
const withApplicationName = (connectionString: string, name: string): string => {
  try {
    const u = new URL(connectionString);
    if (!u.searchParams.has('application_name')) u.searchParams.set('application_name', name);
    return u.toString();
  } catch {
    return connectionString;
  }
};

/**
 * Starts and stops the wallet's graphile-worker runner. Starting does not hold up the role (the
 * worker installs its schema on first use); a failure to start is reported on /healthz, not fatal,
 * because request serving does not depend on the sweeps.
 */
export const walletJobs = (deps: WalletJobDeps & { connectionString: string }) => {
  let starting: Promise<Runner | null> | null = null;
  let lastError: unknown = null;
  const launch = async (): Promise<Runner | null> => {
    try {
      const runner = await run({
        connectionString: withApplicationName(deps.connectionString, 'svc-wallet-jobs'),
        // The worker keeps one connection for LISTEN; its own small pool leaves the role's alone.
        maxPoolSize: 2,
        concurrency: 1,
        noHandleSignals: true,
        pollInterval: 2_000,
        logger: workerLogger(deps.logger),
        taskList: walletTaskList(deps),
        crontab: WALLET_CRONTAB,
      });
      lastError = null;
      return runner;
    } catch (err) {
      lastError = err;
      deps.logger?.error({ err }, 'wallet jobs (graphile-worker) did not start');
      return null;
    }
  };
  return {
    get lastError() {
      return lastError;
    },
    start: (): void => {
      starting ??= launch();
    },
    stop: async (): Promise<void> => {
      const runner = await starting;
      starting = null;
      await runner?.stop();
    },
  };
};
