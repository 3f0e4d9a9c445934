import { type ControlPlaneCommands, controlPlaneCommands } from '../commands/control-plane/commands.js';
import { addControlPlaneServices } from '../edges/grpc/control-plane.js';
import { registerControlPlaneRoutes } from '../edges/http/control-plane/routes.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { auditRelay } from '../projections/audit-relay/projection.js';
import { controlPlaneProjection } from '../projections/control-plane/projection.js';
import { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { workspaceDirectory } from '../projections/control-plane/workspaces.js';
import { policyProjection } from '../projections/policy/projection.js';
import { liveEndpointsFrom } from '../projections/registry/queries.js';
import { catchUp, ProjectionRunner } from '../projections/runner.js';
import type { Role, RoleContext } from './role.js';
import { walletControlPlane } from './wallet.js';

/** The control plane as the CLI, the auth role and tests use it: its commands beside its read model. */
export type ControlPlane = ControlPlaneCommands & { readonly reads: ControlPlaneReads };

/**
 * The control plane's write side on this database: each aggregate's commands asking the read model
 * through its ports, with read-your-writes on the control-plane projection.
 */
export const makeControlPlane = (
  store: EventStore,
  pool: Pool,
  masterKey: Buffer,
  clock: () => Date = () => new Date(),
  options: { allowPrivateDestinations?: boolean } = {},
): ControlPlane => {
  const reads = new ControlPlaneReads(pool);
  const commands = controlPlaneCommands({
    store,
    clock,
    allowPrivateDestinations: options.allowPrivateDestinations === true,
    readYourWrites: (position) => catchUp(pool, controlPlaneProjection, position),
    readYourPolicyWrites: (position) => catchUp(pool, policyProjection, position),
    masterKey,
    workspaces: workspaceDirectory(pool),
    directory: reads,
    endpoints: liveEndpointsFrom(pool),
  });
  return { ...commands, reads };
};

export const controlPlaneRole = (ctx: RoleContext): Role => {
  const cp = makeControlPlane(ctx.eventStore, ctx.pool, ctx.masterKey, undefined, {
    allowPrivateDestinations: ctx.config.SVC_TENANT_PRIVATE_DESTINATIONS === 'allow',
  });
  const relay = new ProjectionRunner(ctx.pool, ctx.databaseUrl, [auditRelay(ctx.bus)], {
    onError: (_name, err) => ctx.logger.warn({ err }, 'audit relay batch failed; retrying'),
  });
  ctx.health.register('audit-relay', async () => {
    if (relay.lastError) throw relay.lastError;
  });
  const wallets = walletControlPlane(ctx, cp.reads);
  return {
    name: 'control-plane',
    http: async (app) => {
      await registerControlPlaneRoutes(app, cp, cp.reads, {
        token: ctx.adminToken,
        emails: ctx.platformAdmins,
      });
      await wallets.http(app);
    },
    // The admin token doubles as the internal service token for gRPC callers.
    grpc: (server) => addControlPlaneServices(server, cp, cp.reads, ctx.adminToken),
    start: async () => {
      relay.start();
      await wallets.start();
    },
    stop: async () => {
      await wallets.stop();
      await relay.stop();
    },
  };
};
