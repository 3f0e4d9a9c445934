import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { request as undiciRequest } from 'undici';
import { ServiceError } from '../../../lib/errors.js';
import { QUERY_ROUTE_SEGMENTS } from '../query/paths.js';
import { credentialOf } from '../session-credential.js';

/**
 * The console's proxy prefix for the query routes (SPEC 4.5: "the console proxies under
 * /api/query/** after enforcing session scope"): /api/query/<route> is the query route /api/<route>.
 * Only the query routes' own first segments (query/paths.ts) are reachable through it.
 */
export const QUERY_PROXY_PREFIX = '/api/query/';

/**
 * A request target that stays what it says: an absolute path under /api/ with no empty, `.` or
 * `..` segment and no encoded slash, backslash or dot segment, so that neither a resolver here nor
 * the upstream can walk it out of /api (or out of the query routes). Null otherwise.
 */
export const apiTarget = (url: string): { path: string; search: string } | null => {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const search = q < 0 ? '' : url.slice(q);
  if (!path.startsWith('/api/') || path.includes('#')) return null;
  for (const segment of path.slice(1).split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return null;
    }
    if (decoded === '' || decoded === '.' || decoded === '..' || /[/\\]/.test(decoded)) return null;
  }
  return { path, search };
};

/** The query route a console path names (`/api/query/requests?x` -> `/api/requests?x`), else null. */
export const queryRouteOf = (url: string): string | null => {
  const target = apiTarget(url);
  if (!target?.path.startsWith(QUERY_PROXY_PREFIX)) return null;
  const rest = target.path.slice(QUERY_PROXY_PREFIX.length);
  const segment = rest.split('/')[0]!;
  return QUERY_ROUTE_SEGMENTS.has(segment) ? `/api/${rest}${target.search}` : null;
};

/**
 * In a process that serves the query routes itself, the prefix is an alias resolved before
 * routing: the same handlers, the same credential checks (the session cookie is read by every
 * `/api` family), live streams included. Anything else under the prefix is left to 404.
 */
export const rewriteQueryAlias = (url: string): string => queryRouteOf(url) ?? url;

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/** Paths the upstream must see with the browser's cookies as sent: sign-in binds its state in one. */
const passesCookies = (path: string): boolean => path.startsWith('/api/session/');

const forwardedHeaders = (request: FastifyRequest, path: string): Record<string, string | string[]> => {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers as IncomingHttpHeaders)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  if (!passesCookies(path)) {
    // The session travels as the bearer it is (SPEC 4.6: proxies attach the session access token);
    // the CSRF check of a cookie-borne change is made here, before anything leaves.
    const token = credentialOf(request);
    delete out.cookie;
    delete out['x-csrf-token'];
    if (token) out.authorization = `Bearer ${token}`;
  }
  out['x-forwarded-host'] = request.headers.host ?? '';
  out['x-forwarded-proto'] = request.protocol;
  out['x-forwarded-for'] = request.ip;
  const length = request.headers['content-length'];
  if (length !== undefined) out['content-length'] = length;
  return out;
};

/**
 * The console's `/api` calls, forwarded to the process (or load balancer) that serves the API
 * roles when this process runs the console without them (scale-out): bodies and answers stream
 * through, live event streams included, and a client that goes away cancels the upstream call.
 */
export const registerApiProxy = (
  app: FastifyInstance,
  options: { upstream: string; query: boolean },
): void => {
  const base = new URL(options.upstream);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  const forward = async (request: FastifyRequest, reply: FastifyReply, url: string) => {
    const checked = apiTarget(url);
    if (!checked) throw new ServiceError('not_found', `no route for ${request.method} ${url.split('?')[0]}`);
    const path = checked.path;
    // Joined, never resolved: the target is always this origin's own /api path.
    const target = new URL(`${base.origin}${checked.path}${checked.search}`);
    const abort = new AbortController();
    // The response, not the request: a request's 'close' also comes once its body has been read.
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
    let answer: Awaited<ReturnType<typeof undiciRequest>>;
    try {
      answer = await undiciRequest(target, {
        method: request.method as 'GET',
        headers: forwardedHeaders(request, path),
        body: hasBody ? request.raw : null,
        signal: abort.signal,
        headersTimeout: 30_000,
        bodyTimeout: 0,
      });
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      throw new ServiceError('upstream_error', `the console's API at ${base.origin} did not answer`, {
        cause: err,
      });
    }
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      reply.header(name, value);
    }
    return reply.send(answer.body);
  };

  const ALL = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
  if (options.query)
    app.route({
      method: [...ALL],
      url: `${QUERY_PROXY_PREFIX}*`,
      handler: (request, reply) => {
        const route = queryRouteOf(request.url);
        if (!route) throw new ServiceError('not_found', `no query route for ${request.url.split('?')[0]}`);
        return forward(request, reply, route);
      },
    });
  app.route({
    method: [...ALL],
    url: '/api/*',
    handler: (request, reply) => forward(request, reply, request.url),
  });
};
