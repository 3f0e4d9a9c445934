import { addPolicyService } from '../edges/grpc/policy.js';
import { SnapshotCache } from '../gateway/snapshot-cache.js';
import { policySnapshotSource } from '../projections/policy/reads.js';
import type { Role, RoleContext } from './role.js';

/**
 * The policy role (SPEC 1.9, 4.8): PolicyService.Evaluate over the policies in force, held in
 * memory and refreshed as they change, with service-token authentication (SPEC 5).
 */
export const policyRole = (ctx: RoleContext): Role => {
  const snapshot = new SnapshotCache(policySnapshotSource(ctx.pool), ctx.databaseUrl, {
    onError: (err) => ctx.logger.error({ err }, 'policy snapshot refresh failed'),
  });
  ctx.health.register('policy', async () => {
    snapshot.current();
  });
  return {
    name: 'policy',
    prepare: async () => {
      await snapshot.start();
    },
    grpc: (server) => addPolicyService(server, (query) => snapshot.current().evaluate(query), ctx.adminToken),
    stop: () => snapshot.stop(),
  };
};
