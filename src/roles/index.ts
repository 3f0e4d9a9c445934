import type { RoleFactory, RoleName } from './role.js';

/**
 * Roles built so far, each loaded only when `--roles` asks for it: a lean gateway process does not
 * carry the control plane's, auth's or ingest's modules (OIDC, payments, graphile-worker, chdb).
 * A role named in ROLE_NAMES but absent here is accepted by `--roles` and reported as not built yet.
 */
export const ROLE_FACTORIES: Partial<Record<RoleName, RoleFactory>> = {
  gateway: (ctx) => import('./gateway.js').then((m) => m.gatewayRole(ctx)),
  'control-plane': (ctx) => import('./control-plane.js').then((m) => m.controlPlaneRole(ctx)),
  auth: (ctx) => import('./auth.js').then((m) => m.authRole(ctx)),
  projector: (ctx) => import('./projector.js').then((m) => m.projectorRole(ctx)),
  ingest: (ctx) => import('./ingest.js').then((m) => m.ingestRole(ctx)),
  query: (ctx) => import('./query.js').then((m) => m.queryRole(ctx)),
  'trace-ingest': (ctx) => import('./trace-ingest.js').then((m) => m.traceIngestRole(ctx)),
  audit: (ctx) => import('./audit.js').then((m) => m.auditRole(ctx)),
  policy: (ctx) => import('./policy.js').then((m) => m.policyRole(ctx)),
  console: (ctx) => import('./console.js').then((m) => m.consoleRole(ctx)),
};
