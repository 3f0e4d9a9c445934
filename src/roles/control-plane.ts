import { ControlPlane } from '../commands/control-plane/service.js';
import { addControlPlaneServices } from '../edges/grpc/control-plane.js';
import { registerControlPlaneRoutes } from '../edges/http/control-plane/routes.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { controlPlaneProjection } from '../projections/control-plane/projection.js';
import { catchUp } from '../projections/runner.js';
import type { Role, RoleContext } from './role.js';

/** The control plane's write side with read-your-writes on its read model. */
export const makeControlPlane = (store: EventStore, pool: Pool, masterKey: Buffer): ControlPlane =>
  new ControlPlane(store, pool, masterKey, (position) => catchUp(pool, controlPlaneProjection, position));

export const controlPlaneRole = (ctx: RoleContext): Role => {
  const cp = makeControlPlane(ctx.eventStore, ctx.pool, ctx.masterKey);
  return {
    name: 'control-plane',
    prepare: () =>
      ctx.apiKeys.start({ onError: (err) => ctx.logger.error({ err }, 'api key cache refresh failed') }),
    http: (app) => registerControlPlaneRoutes(app, cp, ctx.adminToken),
    // The admin token doubles as the internal service token for gRPC callers.
    grpc: (server) => addControlPlaneServices(server, cp, ctx.apiKeys, ctx.adminToken),
  };
};
