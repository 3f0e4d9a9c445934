import { DeveloperTokens } from '../commands/auth/developer-tokens.js';
import { LoginStates } from '../commands/auth/login-states.js';
import { OidcClients } from '../commands/auth/oidc.js';
import { Registration } from '../commands/auth/registration.js';
import { AuthCommands } from '../commands/auth/service.js';
import { Sessions } from '../commands/auth/sessions.js';
import { SignIn } from '../commands/auth/sign-in.js';
import { SignInLinks } from '../commands/auth/sign-in-links.js';
import type { Config } from '../config/config.js';
import { addAuthService } from '../edges/grpc/auth.js';
import { registerAuthRoutes } from '../edges/http/auth/routes.js';
import { overTls } from '../edges/http/session-credential.js';
import type { EventStore } from '../events/event-store.js';
import type { Pool } from '../events/postgres/pool.js';
import { authProjection } from '../projections/auth/projection.js';
import { AuthReads } from '../projections/auth/reads.js';
import { workspaceDirectory } from '../projections/control-plane/workspaces.js';
import { catchUp } from '../projections/runner.js';
import { makeControlPlane } from './control-plane.js';
import type { Role, RoleContext } from './role.js';

/** The auth service's write side with read-your-writes on the auth and control-plane read models. */
export const makeAuth = (store: EventStore, pool: Pool, masterKey: Buffer) => {
  const controlPlane = makeControlPlane(store, pool, masterKey);
  const commands = new AuthCommands(store, (position) => catchUp(pool, authProjection, position));
  const reads = new AuthReads(pool);
  return {
    controlPlane,
    reads,
    registration: new Registration(commands, reads, {
      users: controlPlane,
      workspaces: workspaceDirectory(pool),
      directory: controlPlane.reads,
    }),
    developerTokens: new DeveloperTokens(commands, reads, controlPlane.reads),
    links: new SignInLinks(pool, controlPlane, controlPlane.reads),
  };
};

const signInOf = (auth: ReturnType<typeof makeAuth>, pool: Pool, config: Config) =>
  new SignIn(
    new OidcClients(config.SVC_OIDC_PROVIDERS),
    new LoginStates(pool),
    auth.registration,
    auth.controlPlane,
    {
      defaultPolicy: config.SVC_REGISTRATION_POLICY,
      sessionTtlMs: config.SVC_AUTH_SESSION_TTL_SECONDS * 1_000,
      loginTtlMs: config.SVC_AUTH_LOGIN_TTL_SECONDS * 1_000,
    },
  );

/**
 * SPEC 4.4: OIDC sign-in, console session routes, registration status, developer tokens; SPEC 4.8:
 * gRPC AuthService (VerifyApiKey and the session operations).
 */
export const authRole = (ctx: RoleContext): Role => {
  const auth = makeAuth(ctx.eventStore, ctx.pool, ctx.masterKey);
  const providers = ctx.config.SVC_OIDC_PROVIDERS;
  const sessions = new Sessions(auth.controlPlane, auth.reads, auth.controlPlane.reads);
  const httpsProvider = Object.values(providers).some((p) => new URL(p.redirect_uri).protocol === 'https:');
  return {
    name: 'auth',
    // VerifyApiKey answers from the process's API-key cache (shared with the gateway's).
    prepare: () =>
      ctx.apiKeys.start({ onError: (err) => ctx.logger.error({ err }, 'api key cache refresh failed') }),
    // The admin token doubles as the internal service token for gRPC callers.
    grpc: (server) =>
      addAuthService(
        server,
        {
          apiKeys: ctx.apiKeys,
          sessions,
        },
        ctx.adminToken,
      ),
    http: (app) =>
      registerAuthRoutes(app, {
        signIn: signInOf(auth, ctx.pool, ctx.config),
        developerTokens: auth.developerTokens,
        reads: auth.reads,
        controlPlaneReads: auth.controlPlane.reads,
        sessions,
        links: auth.links,
        sessionTtlMs: ctx.config.SVC_AUTH_SESSION_TTL_SECONDS * 1_000,
        providers: () => Object.keys(providers),
        platformAdmins: ctx.platformAdmins,
        // Secure when the browser is on TLS, or when any provider sends it back to an https URI.
        secureCookies: (request) => overTls(request) || httpsProvider,
      }),
  };
};
