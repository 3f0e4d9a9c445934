import { registerGatewayRoutes } from '../edges/http/gateway/routes.js';
import type { Role, RoleContext } from './role.js';

export const gatewayRole = (ctx: RoleContext): Role => {
  const keys = ctx.apiKeys;
  return {
    name: 'gateway',
    http: (app) => registerGatewayRoutes(app, keys),
    // The key cache warms before the servers listen, so no request meets a cold cache.
    prepare: () =>
      keys.start({ onError: (err) => ctx.logger.error({ err }, 'api key cache refresh failed') }),
  };
};
