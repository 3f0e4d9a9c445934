import type { FastifyInstance } from 'fastify';
import type { ControlPlaneReads } from '../commands/control-plane/reads.js';
import type { PaymentProvider } from '../commands/wallet/ports.js';
import { PostgresEscrow } from '../commands/wallet/postgres-escrow.js';
import { WalletService } from '../commands/wallet/service.js';
import { paymentsFromConfig } from '../commands/wallet/stripe.js';
import type { Config } from '../config/config.js';
import { registerWalletRoutes } from '../edges/http/wallet/routes.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { walletJobs } from '../jobs/wallet.js';
import { catchUp } from '../projections/runner.js';
import { walletProjection } from '../projections/wallet/projection.js';
import type { RoleContext } from './role.js';

/** The wallet's write side with read-your-writes on its read model (HTTP routes, CLI, tests). */
export const makeWalletService = (
  store: EventStore,
  pool: Pool,
  config: Pick<Config, 'SVC_WALLET_HOLD_TTL_SECONDS'>,
  payments: PaymentProvider | null,
): WalletService =>
  new WalletService({
    store,
    pool,
    payments,
    escrow: new PostgresEscrow(pool, config.SVC_WALLET_HOLD_TTL_SECONDS),
    readYourWrites: (position) => catchUp(pool, walletProjection, position),
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
    http: (app: FastifyInstance) => registerWalletRoutes(app, wallet, reads, ctx.adminToken),
    start: () => jobs.start(),
    stop: () => jobs.stop(),
  };
};
