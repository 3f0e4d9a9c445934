import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { bearerToken } from '../../lib/bearer.js';
import { safeEqual } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { parseCookies } from './cookies.js';

/**
 * How a browser's console session reaches the `/api` routes (SPEC 4.4-4.6, 5): the OIDC callback
 * sets the session token in an HTTP-only, SameSite=Lax cookie; every `/api` family that takes a
 * session bearer takes that cookie the same way, so the console's same-origin calls "attach the
 * session" without a script ever reading it.
 *
 * CSRF: a request that carries its session only in the cookie and changes state (anything but GET,
 * HEAD and OPTIONS) must also send `x-csrf-token`, the value GET /api/session answers for that
 * session. The value is a one-way digest of the session token: a foreign page can neither read
 * the cookie nor compute it, and it needs no server-side state. A cookie request whose Origin or
 * Sec-Fetch-Site names another site is refused as well. A request with an Authorization header is
 * judged by that header alone, cookie or not.
 */
export const SESSION_COOKIE = 'svc_session';
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The CSRF token of a session token (sent back by the console as x-csrf-token). */
export const csrfTokenFor = (sessionToken: string): string =>
  createHash('sha256').update('svc console csrf v1\0').update(sessionToken).digest('base64url');

const header = (request: FastifyRequest, name: string): string | undefined => {
  const v = request.headers[name];
  return typeof v === 'string' ? v : undefined;
};

/**
 * Whether the browser reached this service over TLS: here, or at a proxy in front that says so
 * (`x-forwarded-proto`). The session cookies are `Secure` then; a false claim only adds the flag.
 */
export const overTls = (request: FastifyRequest): boolean =>
  request.protocol === 'https' || /^\s*https\s*(,|$)/i.test(header(request, 'x-forwarded-proto') ?? '');

/** True when the browser says the request came from another site than the one it is sent to. */
export const crossSite = (request: FastifyRequest): boolean => {
  const fetchSite = header(request, 'sec-fetch-site');
  if (fetchSite === 'cross-site') return true;
  const origin = header(request, 'origin');
  if (origin === undefined || origin === 'null') return origin === 'null';
  const host = header(request, 'x-forwarded-host') ?? header(request, 'host');
  try {
    return new URL(origin).host !== host;
  } catch {
    return true;
  }
};

/**
 * The bearer credential of an `/api` request: the Authorization bearer when the header is present,
 * else the console session cookie, checked against CSRF for state-changing methods. Null when
 * neither is there; the family's authenticate answers 401 then.
 */
export const credentialOf = (request: FastifyRequest): string | null => {
  if (request.headers.authorization !== undefined) return bearerToken(request.headers.authorization);
  const cookies = parseCookies(request.headers.cookie);
  const cookie = cookies.get(SESSION_COOKIE);
  if (!cookie) return null;
  // Two session cookies means one was planted (a sibling subdomain can set one for a wider domain
  // or a longer path): neither is trusted, so a browser cannot be switched into another session.
  if (cookies.count(SESSION_COOKIE) > 1)
    throw new ServiceError(
      'unauthenticated',
      "more than one console session cookie was sent: clear this site's cookies and sign in again",
    );
  if (crossSite(request))
    throw new ServiceError('forbidden', 'a console session cannot be used from another site');
  if (!SAFE_METHODS.has(request.method)) {
    const sent = header(request, CSRF_HEADER);
    if (!sent || !safeEqual(sent, csrfTokenFor(cookie)))
      throw new ServiceError(
        'forbidden',
        `missing or wrong ${CSRF_HEADER} header: send the csrf_token of GET /api/session with every change`,
      );
  }
  return cookie;
};

/** Who is calling, the Authorization header as a query route expects it (`Bearer <token>`). */
export const authorizationOf = (request: FastifyRequest): string | undefined => {
  const token = credentialOf(request);
  return token === null ? request.headers.authorization : `Bearer ${token}`;
};
