import type { FastifyInstance } from 'fastify';
import { authenticatedApiFamily, publicApiFamily } from '../api-family.js';
import type { AuthHttpDeps } from './deps.js';
import { registerDeveloperTokenRoutes } from './developer-token-routes.js';
import { registerRegistrationStatusRoutes } from './registration-routes.js';
import { requireSession } from './session.js';
import { registerProviderList, registerSessionRoutes } from './session-routes.js';
import { registerSignInRoutes } from './sign-in-routes.js';

/**
 * Auth bodies are short: the largest is a sign-in callback, whose callback URL is at most 8 KiB,
 * and a developer-token request names an org, a project and a name.
 */
const AUTH_BODY_LIMIT = 16 * 1024;

/**
 * SPEC 4.4: the auth service's routes and the console's session routes. The console proxies of the
 * registration status and developer-token routes share these paths, so each is mounted once.
 * Sign-in and registration status have no bearer by design; the developer-token routes take a
 * console session (SPEC 5), verified before the body is read.
 */
export const registerAuthRoutes = async (app: FastifyInstance, deps: AuthHttpDeps): Promise<void> => {
  const clock = deps.clock ?? (() => new Date());
  app.addHook('onSend', async (_request, reply, payload) => {
    // Every answer here carries a secret or a decision about one: never stored by a cache.
    reply.header('cache-control', 'no-store');
    return payload;
  });
  await app.register(async (scope) => {
    publicApiFamily(scope, { bodyLimit: AUTH_BODY_LIMIT });
    registerSignInRoutes(scope, deps);
    registerRegistrationStatusRoutes(scope, deps.reads, clock);
    registerProviderList(scope, deps.providers);
  });
  await app.register(async (scope) => {
    const family = authenticatedApiFamily(scope, {
      bodyLimit: AUTH_BODY_LIMIT,
      authenticate: (request) => requireSession(request, deps.controlPlaneReads, clock()),
    });
    registerDeveloperTokenRoutes(scope, deps.developerTokens, family.caller);
    registerSessionRoutes(scope, {
      sessions: deps.sessions,
      sessionByToken: (token) => deps.reads.sessionByToken(token),
      reads: deps.controlPlaneReads,
      providers: deps.providers,
      platformAdmins: deps.platformAdmins,
      secureCookies: deps.secureCookies,
      principal: family.caller,
    });
  });
};
