import type { FastifyInstance } from 'fastify';
import type { AuthHttpDeps } from './deps.js';
import { registerDeveloperTokenRoutes } from './developer-token-routes.js';
import { registerRegistrationStatusRoutes } from './registration-routes.js';
import { registerSignInRoutes } from './sign-in-routes.js';

/**
 * SPEC 4.4: the auth service's routes and the console's session routes. The console proxies of the
 * registration status and developer-token routes share these paths, so each is mounted once.
 */
export const registerAuthRoutes = (app: FastifyInstance, deps: AuthHttpDeps): void => {
  const clock = deps.clock ?? (() => new Date());
  app.addHook('onSend', async (_request, reply, payload) => {
    // Every answer here carries a secret or a decision about one: never stored by a cache.
    reply.header('cache-control', 'no-store');
    return payload;
  });
  registerSignInRoutes(app, deps);
  registerRegistrationStatusRoutes(app, deps.reads, clock);
  registerDeveloperTokenRoutes(app, deps.developerTokens, deps.controlPlaneReads, clock);
};
