import { PROJECTIONS } from '../projections/index.js';
import { ProjectionRunner } from '../projections/runner.js';
import type { Role, RoleContext } from './role.js';

/** The projector worker: keeps every Postgres read model at the head of the event store. */
export const projectorRole = (ctx: RoleContext): Role => {
  const runner = new ProjectionRunner(ctx.pool, ctx.databaseUrl, PROJECTIONS, {
    onError: (name, err) => ctx.logger.error({ projection: name, err }, 'projection batch failed; retrying'),
  });
  ctx.health.register('projector', async () => {
    if (runner.lastError) throw runner.lastError;
  });
  return {
    name: 'projector',
    start: () => runner.start(),
    stop: () => runner.stop(),
  };
};
