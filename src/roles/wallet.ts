import type { FastifyInstance } from 'fastify';
import type { PaymentProvider, WaitForLedger } from '../commands/wallet/ports.js';
import { PostgresEscrow } from '../commands/wallet/postgres-escrow.js';
import { WalletCommands } from '../commands/wallet/service.js';
import { settlement } from '../commands/wallet/settlement.js';
import { paymentsFromConfig } from '../commands/wallet/stripe.js';
import type { Config } from '../config/config.js';
import { registerWalletRoutes } from '../edges/http/wallet/routes.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { walletJobs } from '../jobs/wallet.js';
import type { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { workspaceDirectory } from '../projections/control-plane/workspaces.js';
import { catchUp } from '../projections/runner.js';
import { walletProjection } from '../projections/wallet/projection.js';
import { WalletReads } from '../projections/wallet/reads.js';
import type { RoleContext } from './role.js';

/** Read-your-writes on the wallet: brings the balance projection up to a position from this process. */
export const waitForLedger =
  (pool: Pool): WaitForLedger =>
  (position) =>
    catchUp(pool, walletProjection, position);

/** The wallet as the edges, the CLI and tests use it: its commands, and its read model beside them. */
export type WalletService = WalletCommands & { readonly reads: WalletReads };

/** The wallet's write side with read-your-writes on its read model (HTTP routes, CLI, tests). */
export const makeWalletService = (
  store: EventStore,
  pool: Pool,
  config: Pick<Config, 'SVC_WALLET_HOLD_TTL_SECONDS'>,
  payments: PaymentProvider | null,
): WalletService => {
  const reads = new WalletReads(pool);
  const commands = new WalletCommands({
    store,
    pool,
    payments,
    escrow: new PostgresEscrow(pool, config.SVC_WALLET_HOLD_TTL_SECONDS),
    ledger: reads,
    workspaces: workspaceDirectory(pool),
    waitForLedger: waitForLedger(pool),
  });
  return Object.assign(commands, { reads });
};

/**
 * Settlement wired to the Postgres escrow's holds; with `waitForBalance` (tests, CLI) it applies the
 * ledger to the balance read model before answering, otherwise the projector does.
 */
export const createSettlement = (deps: { pool: Pool; store: EventStore; waitForBalance?: boolean }) =>
  settlement({
    store: deps.store,
    holds: new PostgresEscrow(deps.pool),
    ...(deps.waitForBalance ? { waitForLedger: waitForLedger(deps.pool) } : {}),
  });

/**
 * What the control-plane role runs for wallets: the payment and wallet routes (SPEC 4.6) and the
 * graphile-worker jobs (hold expiry, reconciliation). Payments stay off without SVC_PAYMENT_API_KEY.
 */
export const walletControlPlane = (ctx: RoleContext, reads: ControlPlaneReads) => {
  const wallet = makeWalletService(ctx.eventStore, ctx.pool, ctx.config, paymentsFromConfig(ctx.config));
  const jobs = walletJobs({
    pool: ctx.pool,
    store: ctx.eventStore,
    connectionString: ctx.databaseUrl,
    reconcileGraceSeconds: ctx.config.SVC_WALLET_RECONCILE_GRACE_SECONDS,
    logger: ctx.logger,
  });
  ctx.health.register('wallet-jobs', async () => {
    if (jobs.lastError) throw jobs.lastError;
  });
  return {
    wallet,
    http: (app: FastifyInstance) =>
      registerWalletRoutes(
        app,
        { commands: wallet, ledger: wallet.reads, controlPlane: reads },
        { token: ctx.adminToken, emails: ctx.platformAdmins },
      ),
    start: () => jobs.start(),
    stop: () => jobs.stop(),
  };
};
