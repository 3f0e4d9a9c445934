import { authRole } from './auth.js';
import { controlPlaneRole } from './control-plane.js';
import { gatewayRole } from './gateway.js';
import { projectorRole } from './projector.js';
import type { RoleFactory, RoleName } from './role.js';

/**
 * Roles built so far. A role named in ROLE_NAMES but absent here is accepted by `--roles` and
 * reported as not built yet.
 */
export const ROLE_FACTORIES: Partial<Record<RoleName, RoleFactory>> = {
  gateway: gatewayRole,
  'control-plane': controlPlaneRole,
  auth: authRole,
  projector: projectorRole,
  ingest: (ctx) => import('./ingest.js').then((m) => m.ingestRole(ctx)),
  query: (ctx) => import('./query.js').then((m) => m.queryRole(ctx)),
};
