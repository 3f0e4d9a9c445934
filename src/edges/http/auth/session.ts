import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads, SessionPrincipal } from '../../../projections/control-plane/reads.js';
import { bearerOf } from '../control-plane/auth.js';
import { parseCookies } from './cookies.js';

/** The console session cookie the OIDC callback sets; its value is the session bearer token. */
export const SESSION_COOKIE = 'svc_session';

/**
 * The console session token of a request: the bearer token, or, for the console's same-origin
 * calls, the session cookie. An Authorization header, when present, is the only credential looked
 * at. Cookie use stays safe from cross-site requests: the cookie is SameSite=Lax and the routes that
 * take it accept JSON or DELETE, which a foreign page cannot send without a CORS preflight.
 */
export const sessionTokenOf = (request: FastifyRequest): string | null =>
  request.headers.authorization !== undefined
    ? bearerOf(request)
    : (parseCookies(request.headers.cookie).get(SESSION_COOKIE) ?? null);

/** The signed-in user of a console-session route, or 401. */
export const requireSession = async (
  request: FastifyRequest,
  reads: ControlPlaneReads,
  now: Date,
): Promise<SessionPrincipal> => {
  const token = sessionTokenOf(request);
  if (!token)
    throw new ServiceError(
      'unauthenticated',
      'missing console session: send Authorization: Bearer <session token>',
    );
  const principal = await reads.sessionPrincipal(token, now);
  if (!principal) throw new ServiceError('unauthenticated', 'invalid or expired session token');
  return principal;
};
