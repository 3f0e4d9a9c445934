import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { safeEqual } from '../../../lib/crypto.js';
import { ServiceError } from '../../../lib/errors.js';
import { parseBody } from '../body.js';
import { parseCookies, serializeCookie } from '../cookies.js';
import { routeDoc } from '../openapi.js';
import { crossSite, SESSION_COOKIE } from '../session-credential.js';
import type { AuthHttpDeps } from './deps.js';
import { safeReturnPath } from './return-to.js';

/** Binds a console sign-in to the browser that started it (SPEC 5: browser-bound state). */
export const STATE_COOKIE = 'svc_oidc_state';

const secret = z.string().min(1).max(1_024);
const startBody = z.strictObject({
  return_to: z.string().optional(),
  invite: secret.optional(),
  registration_code: secret.optional(),
});

const linkBody = z.strictObject({ token: z.string().min(1).max(256) });

/** The console session cookie, for the session a sign-in issued (its lifetime is the session's). */
const setSessionCookie = (
  reply: FastifyReply,
  session: { token: string; expires_at: string },
  secure: boolean,
) =>
  reply.header(
    'set-cookie',
    serializeCookie(SESSION_COOKIE, session.token, {
      path: '/',
      maxAge: (Date.parse(session.expires_at) - Date.now()) / 1_000,
      secure,
    }),
  );

const callbackBody = z.union([
  z.strictObject({ callback_url: z.url().max(8_192) }),
  z.strictObject({ code: z.string().min(1).max(4_096), state: secret, iss: secret.optional() }),
]);

type Params = { provider: string };
type Query = Record<string, string | string[] | undefined>;

const single = (query: Query, name: string): string | undefined => {
  const v = query[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
};

const callbackPath = (provider: string) => `/api/session/oidc/${encodeURIComponent(provider)}/callback`;

/** The query string exactly as the identity provider sent it (the authorization response). */
const rawQuery = (request: FastifyRequest) => new URLSearchParams(request.url.split('?')[1] ?? '');

/** The console's sign-in page, where a browser learns why its sign-in failed. */
export const SIGN_IN_PAGE = '/console/sign-in';

/** Why a browser's sign-in failed, as the console's sign-in page explains it. */
export const failureReason = (err: unknown): string => {
  if (!(err instanceof ServiceError)) return 'failed';
  if (err.code === 'forbidden')
    return err.param === 'state_cookie' ? 'state_mismatch' : 'registration_refused';
  if (err.code === 'not_found') return err.param === null ? 'unknown_provider' : 'failed';
  if (err.code === 'upstream_error') return 'provider_unavailable';
  if (err.code === 'bad_request')
    return err.param === 'state' || err.param === 'token' ? 'expired' : 'provider_refused';
  return 'failed';
};

/** A navigation by a browser (it asks for HTML), as opposed to a script or test client asking for JSON. */
const wantsPage = (request: FastifyRequest): boolean => (request.headers.accept ?? '').includes('text/html');

/**
 * A browser's failed sign-in goes to the console's sign-in page with the reason (SPEC 4.4: a
 * clear page for every failure); other clients keep the `/api` envelope and its status.
 */
const orFailurePage = async (
  request: FastifyRequest,
  reply: FastifyReply,
  step: () => Promise<FastifyReply>,
): Promise<FastifyReply> => {
  try {
    return await step();
  } catch (err) {
    if (!wantsPage(request)) throw err;
    request.log.info({ err }, 'console sign-in failed');
    // The reason only: a message in the URL would let anyone put words on this page.
    const search = new URLSearchParams({ error: failureReason(err) });
    return reply.header('cache-control', 'no-store').redirect(`${SIGN_IN_PAGE}?${search}`, 303);
  }
};

export const registerSignInRoutes = (app: FastifyInstance, deps: AuthHttpDeps): void => {
  const { signIn } = deps;

  // JSON API: the caller keeps the state and brings the provider's answer back.
  app.post('/api/auth/oidc/:provider/start', routeDoc({ body: startBody, public: true }), async (request) => {
    const { provider } = request.params as Params;
    const body = parseBody(startBody, request.body);
    return signIn.start(provider, 'api', {
      returnTo: safeReturnPath(body.return_to),
      invite: body.invite,
      registrationCode: body.registration_code,
    });
  });

  app.post(
    '/api/auth/oidc/:provider/callback',
    routeDoc({ body: callbackBody, public: true }),
    async (request) => {
      const { provider } = request.params as Params;
      const body = parseBody(callbackBody, request.body);
      const params =
        'callback_url' in body
          ? new URL(body.callback_url).searchParams
          : new URLSearchParams({
              code: body.code,
              state: body.state,
              ...(body.iss ? { iss: body.iss } : {}),
            });
      const session = await signIn.complete(provider, 'api', params);
      return { ...session, return_to: safeReturnPath(session.return_to) };
    },
  );

  // Console: browser redirects, the state bound in a cookie scoped to the callback path.
  app.get('/api/session/oidc/:provider/start', (request, reply) =>
    orFailurePage(request, reply, async () => {
      const { provider } = request.params as Params;
      const query = request.query as Query;
      const started = await signIn.start(provider, 'console', {
        returnTo: safeReturnPath(single(query, 'return_to')),
        invite: single(query, 'invite'),
        registrationCode: single(query, 'registration_code'),
      });
      reply.header(
        'set-cookie',
        serializeCookie(STATE_COOKIE, started.state, {
          path: callbackPath(provider),
          maxAge: signIn.loginTtlSeconds,
          secure: deps.secureCookies(request),
        }),
      );
      return reply.redirect(started.authorization_url, 302);
    }),
  );

  // An operator's single-use sign-in link (`svc console link`). Opening it changes nothing: link
  // scanners and chat unfurlers fetch URLs before people do. The console's sign-in page asks the
  // person to continue, and that POST (JSON, same site only) takes the link and sets the session.
  app.get('/api/session/link', async (request, reply) => {
    const token = single(request.query as Query, 'token') ?? '';
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    return reply.redirect(`${SIGN_IN_PAGE}?${new URLSearchParams({ link: token })}`, 303);
  });
  app.post('/api/session/link', routeDoc({ body: linkBody, public: true }), async (request, reply) => {
    // A JSON body cannot be posted from another site without a CORS preflight, which fails here;
    // a browser that says the request is cross-site is refused outright (no login CSRF).
    if (crossSite(request))
      throw new ServiceError('forbidden', 'a sign-in link can only be used from this site');
    const { token } = parseBody(linkBody, request.body);
    const session = await deps.links.redeem(token, deps.sessionTtlMs);
    if (!session)
      throw new ServiceError('bad_request', 'unknown, used or expired sign-in link', { param: 'token' });
    setSessionCookie(reply, session, deps.secureCookies(request));
    return { signed_in: true, return_to: safeReturnPath(session.return_to) };
  });

  app.get('/api/session/oidc/:provider/callback', (request, reply: FastifyReply) =>
    orFailurePage(request, reply, async () => {
      const { provider } = request.params as Params;
      const secure = deps.secureCookies(request);
      const bound = parseCookies(request.headers.cookie).get(STATE_COOKIE);
      const params = rawQuery(request);
      const state = params.get('state');
      // A mismatch changes nothing: a forged callback must not end the browser's own sign-in.
      if (!bound || !state || !safeEqual(bound, state))
        throw new ServiceError(
          'forbidden',
          'this sign-in was not started in this browser (state cookie mismatch)',
          { param: 'state_cookie' },
        );
      // From here the state is taken, so its cookie goes too, whatever the outcome.
      reply.header(
        'set-cookie',
        serializeCookie(STATE_COOKIE, '', { path: callbackPath(provider), maxAge: 0, secure }),
      );
      const session = await signIn.complete(provider, 'console', params);
      const maxAge = (Date.parse(session.expires_at) - Date.now()) / 1_000;
      // Appended beside the cleared state cookie: fastify keeps every set-cookie value.
      reply.header(
        'set-cookie',
        serializeCookie(SESSION_COOKIE, session.token, { path: '/', maxAge, secure }),
      );
      return reply.redirect(safeReturnPath(session.return_to), 302);
    }),
  );
};
