import { addQueryService } from '../edges/grpc/query.js';
import { registerQueryRoutes } from '../edges/http/query/routes.js';
import { developerTokenVerifier } from '../projections/auth/reads.js';
import { ControlPlaneReads } from '../projections/control-plane/reads.js';
import { LiveSessions } from '../query/live.js';
import { artifactUrlKey } from '../query/trace-artifacts.js';
import { TraceLiveSessions } from '../query/trace-live.js';
import type { Role, RoleContext } from './role.js';

/** SPEC 4.5 query HTTP API and 4.8 QueryService over the analytics store, read models and objects. */
export const queryRole = (ctx: RoleContext): Role => {
  const analytics = ctx.analytics;
  if (!analytics) throw new Error('the query role needs the analytics store');
  const reads = new ControlPlaneReads(ctx.pool);
  const limits = {
    pollMs: ctx.config.SVC_QUERY_LIVE_POLL_MS,
    heartbeatMs: ctx.config.SVC_QUERY_LIVE_HEARTBEAT_MS,
    maxPerSession: ctx.config.SVC_QUERY_LIVE_MAX_PER_SESSION,
    maxPerOrg: ctx.config.SVC_QUERY_LIVE_MAX_PER_ORG,
  };
  const live = new LiveSessions(analytics, limits, (err) =>
    ctx.logger.warn({ err }, 'live session poll failed; retrying'),
  );
  // The trace streams have the same limits, counted apart from the request streams.
  const traceLive = new TraceLiveSessions(analytics, limits, (err) =>
    ctx.logger.warn({ err }, 'live trace poll failed; retrying'),
  );
  return {
    name: 'query',
    http: (app) =>
      registerQueryRoutes(app, {
        reads,
        verifyDeveloperToken: developerTokenVerifier(ctx.pool),
        adminToken: ctx.adminToken,
        platformAdmins: ctx.platformAdmins,
        analytics,
        objects: ctx.objects,
        pool: ctx.pool,
        maxExportRows: ctx.config.SVC_QUERY_EXPORT_MAX_ROWS,
        maxExportDays: 366,
        live,
        traces: { artifactUrlKey: artifactUrlKey(ctx.masterKey), live: traceLive },
      }),
    grpc: (server) => addQueryService(server, analytics, ctx.adminToken),
    stop: () => {
      live.stop();
      traceLive.stop();
    },
  };
};
