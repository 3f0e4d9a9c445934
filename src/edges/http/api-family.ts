import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AnalyticsError } from '../../analytics/port.js';
import { UnstorableEventError, VersionConflictError } from '../../events/event-store.js';
import { type ErrorCode, ServiceError } from '../../lib/errors.js';
import { fieldOf, unstorableIn } from '../../lib/storable.js';

/**
 * A family of `/api` routes (control plane, wallet, auth, query) shares one way in, set up once in
 * the family's plugin scope so every route registered there inherits it:
 *
 * 1. the caller's credential is verified in an `onRequest` hook, before fastify reads a byte of the
 *    body (SPEC 5): a caller without a valid credential gets 401, never a 400 naming body fields,
 *    and its body is never buffered or parsed;
 * 2. a body size limit per family, which fastify checks against Content-Length before reading
 *    (413), and while reading a chunked body;
 * 3. path and query parameters PostgreSQL cannot store (NUL) are refused with 400 naming them;
 * 4. failures become the `/api` envelope (SPEC 7.6): fastify's own 4xx, a version conflict that
 *    outlived the command's retries (409), an event the store refuses (400).
 */
export interface ApiFamily<C> {
  /** The caller the family's hook authenticated. Only callable inside the family's routes. */
  caller(request: FastifyRequest): C;
}

export interface ApiFamilyOptions<C> {
  /** Bytes a request body of the family may have. */
  bodyLimit: number;
  /** Verifies the caller's credential or throws 401; reads nothing of the body. */
  authenticate: (request: FastifyRequest) => Promise<C> | C;
}

/** A family whose every route needs a credential; the handlers authorize with `caller(request)`. */
export const authenticatedApiFamily = <C>(
  scope: FastifyInstance,
  options: ApiFamilyOptions<C>,
): ApiFamily<C> => {
  const callers = new WeakMap<FastifyRequest, C>();
  // Registered first: hooks run in order, so a caller without a credential learns nothing else.
  scope.addHook('onRequest', async (request) => {
    callers.set(request, await options.authenticate(request));
  });
  publicApiFamily(scope, { bodyLimit: options.bodyLimit });
  return {
    caller: (request) => {
      const caller = callers.get(request);
      if (caller === undefined) throw new Error(`${request.url}: route registered outside its /api family`);
      return caller;
    },
  };
};

/**
 * Routes without a bearer by design (OIDC sign-in, registration status, signed payment webhooks):
 * the same limit, parameter check and envelope, without a credential.
 */
export const publicApiFamily = (scope: FastifyInstance, options: { bodyLimit: number }): void => {
  scope.addHook('onRoute', (route) => {
    route.bodyLimit ??= options.bodyLimit;
  });
  scope.addHook('onRequest', async (request) => {
    refuseUnstorableParameters(request);
  });
  scope.setErrorHandler((err, request, reply) => {
    if (!request.raw.complete) drainOrClose(request, reply);
    // The server's handler renders the envelope (and logs what is still a 500).
    throw toApiError(err, request, reply);
  });
};

/**
 * The most a refused, unread body is read and discarded for (never buffered): as much as a model
 * route accepts by default (SVC_GATEWAY_MAX_REQUEST_BYTES), so a client of this service that is
 * still sending receives its 401 or 413 instead of a connection reset under it.
 */
const DRAIN_MAX_BYTES = 16 * 1024 * 1024;

/**
 * An answer sent before the body arrived: Node discards the rest after the answer and keeps the
 * connection when it is told nothing else. A larger body, or one of unknown length, closes the
 * connection instead, so nobody makes the server read 24 MB it has already refused.
 */
const drainOrClose = (request: FastifyRequest, reply: FastifyReply): void => {
  const length = Number(request.headers['content-length']);
  // fastify marks its own body errors (413) connection: close; undone for a body worth draining.
  if (Number.isFinite(length) && length <= DRAIN_MAX_BYTES) reply.removeHeader('connection');
  else reply.header('connection', 'close');
};

const refuseUnstorableParameters = (request: FastifyRequest): void => {
  for (const [where, values] of [
    ['path parameter', request.params],
    ['query parameter', request.query],
  ] as const) {
    const bad = unstorableIn(values ?? {});
    if (!bad) continue;
    const field = fieldOf(bad.path.slice(0, 1));
    throw new ServiceError('bad_request', `${where} ${field} ${bad.problem}`, { param: field });
  }
};

/** fastify's client errors (body parsing, size, media type) by status, in the catalogue's codes. */
const CLIENT_ERRORS: Partial<Record<number, ErrorCode>> = {
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

const toApiError = (err: unknown, request: FastifyRequest, reply: FastifyReply): unknown => {
  if (err instanceof ServiceError) return err;
  if (err instanceof VersionConflictError)
    return new ServiceError(
      'conflict',
      'another change to the same record was saved at the same moment: read it again and retry',
    );
  // Analytics down or slow for a while (a data process restarting, a ClickHouse server away): the
  // caller may retry; anything else from the store stays an internal error.
  if (err instanceof AnalyticsError && err.retryable) {
    reply.header('retry-after', '2');
    return new ServiceError('service_unavailable', 'analytics is not available right now; retry shortly');
  }
  if (err instanceof UnstorableEventError)
    return new ServiceError(
      'bad_request',
      `this request carries a value that cannot be stored: ${err.field} ${err.problem}`,
    );
  const { statusCode, message } = err as { statusCode?: unknown; message?: unknown };
  if (typeof statusCode !== 'number' || statusCode < 400 || statusCode >= 500) return err;
  if (statusCode === 413)
    return new ServiceError(
      'payload_too_large',
      `the request body is larger than the ${request.routeOptions.bodyLimit} bytes this route accepts`,
    );
  return new ServiceError(CLIENT_ERRORS[statusCode] ?? 'bad_request', String(message ?? 'bad request'), {
    status: statusCode,
  });
};
