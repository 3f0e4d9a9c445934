import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SessionRow } from '../../../commands/auth/ports.js';
import type { Sessions } from '../../../commands/auth/sessions.js';
import { isPlatformAdmin } from '../../../config/config.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads, SessionPrincipal } from '../../../projections/control-plane/reads.js';
import { serializeCookie } from '../cookies.js';
import { credentialOf, csrfTokenFor, SESSION_COOKIE } from '../session-credential.js';

/**
 * The console's own session routes (SPEC 4.4 console sign-in, 5 session scope): who is signed in
 * and the CSRF token of the session (GET /api/session), sign-out (POST /api/session/sign-out), and
 * which identity providers a browser may sign in with (GET /api/session/providers, no credential).
 */
export const registerSessionRoutes = (
  app: FastifyInstance,
  deps: {
    sessions: Pick<Sessions, 'revoke'>;
    /** The session row a token names; the family's hook has already found it live. */
    sessionByToken: (token: string) => Promise<SessionRow | null>;
    reads: ControlPlaneReads;
    providers: () => readonly string[];
    /** SVC_PLATFORM_ADMINS: these users' sessions act as the platform administrator. */
    platformAdmins: ReadonlySet<string>;
    secureCookies: (request: FastifyRequest) => boolean;
    /** The signed-in user of a session-bearer route (the family's caller). */
    principal: (request: FastifyRequest) => SessionPrincipal;
  },
): void => {
  app.get('/api/session', async (request) => {
    const principal = deps.principal(request);
    const token = credentialOf(request)!;
    const session = await deps.sessionByToken(token);
    if (!session) throw new ServiceError('unauthenticated', 'invalid or expired session token');
    const admin = isPlatformAdmin(deps.platformAdmins, principal.email);
    // The administrator sees every workspace, as a manager would; a user sees their own.
    const workspaces = await deps.reads.workspaces(admin ? undefined : [...principal.memberships.keys()]);
    return {
      user: { user_id: principal.user_id, email: principal.email },
      session_id: session.session_id,
      expires_at: session.expires_at.toISOString(),
      csrf_token: csrfTokenFor(token),
      admin,
      workspaces: workspaces.map((w) => ({
        workspace_id: w.workspace_id,
        name: w.name,
        role: admin ? 'manager' : (principal.memberships.get(w.workspace_id) ?? 'member'),
      })),
    };
  });

  // A change of state: the family's credential check asks for the CSRF token when the session
  // came in the cookie. The session is revoked (its bearer stops working everywhere), then the
  // cookie is cleared.
  app.post('/api/session/sign-out', async (request, reply) => {
    const principal = deps.principal(request);
    const session = await deps.sessionByToken(credentialOf(request)!);
    if (session) await deps.sessions.revoke({ id: `user:${principal.user_id}` }, session.session_id);
    reply.header(
      'set-cookie',
      serializeCookie(SESSION_COOKIE, '', { path: '/', maxAge: 0, secure: deps.secureCookies(request) }),
    );
    return { signed_out: true };
  });
};

/** GET /api/session/providers: the names of the configured identity providers, for the sign-in page. */
export const registerProviderList = (app: FastifyInstance, providers: () => readonly string[]): void => {
  app.get('/api/session/providers', async () => ({ providers: providers().map((name) => ({ name })) }));
};
