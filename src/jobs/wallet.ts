import type { TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import { PostgresEscrow } from '../commands/wallet/postgres-escrow.js';
import { expireHolds, reconcileTopUps, type SweepDeps } from '../commands/wallet/sweeps.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { workspaceDirectory } from '../projections/control-plane/workspaces.js';
import { catchUp } from '../projections/runner.js';
import { walletProjection } from '../projections/wallet/projection.js';
import { WalletReads } from '../projections/wallet/reads.js';
import { jobRunner } from './runner.js';

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

/** The sweeps' ports on this database: the escrow's holds, the ledger read model, the workspaces. */
const sweepDeps = (deps: WalletJobDeps): SweepDeps => ({
  store: deps.store,
  holds: new PostgresEscrow(deps.pool),
  payments: new WalletReads(deps.pool),
  workspaces: workspaceDirectory(deps.pool),
  waitForLedger: (position) => catchUp(deps.pool, walletProjection, position),
});

export const walletTaskList = (deps: WalletJobDeps): TaskList => {
  const sweeps = sweepDeps(deps);
  return {
    [WALLET_TASKS.expireHolds]: async () => {
      const expired = await expireHolds(sweeps);
      if (expired > 0) deps.logger?.info({ expired }, 'wallet holds expired');
    },
    [WALLET_TASKS.reconcile]: async () => {
      const mismatches = await reconcileTopUps(sweeps, { graceSeconds: deps.reconcileGraceSeconds });
      for (const m of mismatches) deps.logger?.warn({ mismatch: m }, 'wallet.reconciliation.mismatch');
    },
  };
};

/** Starts and stops the wallet's graphile-worker runner (see src/jobs/runner.ts). */
export const walletJobs = (deps: WalletJobDeps & { connectionString: string }) =>
  jobRunner({
    name: 'wallet',
    connectionString: deps.connectionString,
    taskList: walletTaskList(deps),
    crontab: WALLET_CRONTAB,
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
