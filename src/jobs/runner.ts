import { type Runner, run, type TaskList, Logger as WorkerLogger } from 'graphile-worker';
import type { Logger } from 'pino';
import { createPool, type Pool } from '../events/postgres/pool.js';

/** graphile-worker's log lines into the service's pino logger. */
const workerLogger = (logger: Logger | undefined, name: string) =>
  new WorkerLogger(() => (level, message, meta) => {
    if (!logger) return;
    const severity = String(level);
    const log = severity === 'error' ? logger.error : severity === 'warning' ? logger.warn : logger.debug;
    log.call(logger, { jobs: name, ...(meta ?? {}) }, message);
  });

/**
 * A graphile-worker runner for one role's periodic jobs (ARCHITECTURE.md "jobs"). graphile-worker's
 * cron fires each item once across every process that runs it, so scaling a role out does not
 * multiply its jobs. Starting does not hold up the role (the worker installs its schema on first
 * use); a failure to start is reported through `lastError` (on /healthz), never fatal.
 */
export const jobRunner = (options: {
  name: string;
  connectionString: string;
  taskList: TaskList;
  crontab: string;
  logger?: Logger;
}) => {
  let starting: Promise<Runner | null> | null = null;
  let pool: Pool | null = null;
  let lastError: unknown = null;
  const launch = async (): Promise<Runner | null> => {
    // Our pool, not one graphile-worker makes from a URL (the shutdown crash):
    // at stop it removes its own pool's 'error' listeners and then ends that pool without waiting,
    // so a session the server ended in that moment crashed the process. createPool's listeners
    // stay, and stop() waits for the end. One connection for LISTEN and one to work: the role's
    // own pool stays free.
    pool = createPool(options.connectionString, { max: 2, application: `svc-${options.name}-jobs` });
    try {
      const runner = await run({
        pgPool: pool,
        concurrency: 1,
        noHandleSignals: true,
        pollInterval: 2_000,
        logger: workerLogger(options.logger, options.name),
        taskList: options.taskList,
        crontab: options.crontab,
      });
      lastError = null;
      return runner;
    } catch (err) {
      lastError = err;
      options.logger?.error({ err }, `${options.name} jobs (graphile-worker) did not start`);
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
      await pool?.end().catch(() => {});
      pool = null;
    },
  };
};
