import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, {
  type ConnectionError,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type RouteOptions,
} from 'fastify';
import type { Logger } from 'pino';
import { Histogram, type Registry } from 'prom-client';
import { renderAltError, renderApiError, renderPrimaryError, ServiceError } from '../../lib/errors.js';
import type { HealthRegistry } from '../../lib/health.js';
import { isCorrelationId, newId } from '../../lib/ids.js';
import { childrenOf } from '../../lib/metrics.js';
import { type DocumentedRoute, openApiDocument, type RouteDoc } from './openapi.js';

/** A part of the process that serves HTTP routes (a role): its name, and its routes in their own scope. */
export interface HttpMount {
  name: string;
  rewriteUrl?(url: string): string;
  http?(app: FastifyInstance): Promise<void> | void;
}

export interface HttpServerOptions {
  logger: Logger;
  metrics: Registry;
  health: HealthRegistry;
  roles: readonly HttpMount[];
  bodyLimit?: number;
  /** Metrics of another process this one answers for (its data process), appended to /metrics. */
  moreMetrics?: () => Promise<string>;
  /** This process's own metrics, when they are more than its registry (a worker's: cli/worker-process.ts). */
  ownMetrics?: () => Promise<string>;
  /** Told of every route a role registers (its name, each method, the URL pattern). */
  onRoute?: (route: ServedRoute) => void;
  /** Adds hooks to every route before any is registered (OpenTelemetry's server spans). */
  instrument?: (app: FastifyInstance) => void;
}

/** One route of a role, as fastify registered it. */
export interface ServedRoute {
  role: string;
  method: string;
  url: string;
}

/**
 * One fastify server for every role in the process: each role registers its routes in its own
 * plugin scope; /healthz and /metrics are shared.
 */
export const createHttpServer = async (options: HttpServerOptions): Promise<FastifyInstance> => {
  const rewrites = options.roles.flatMap((r) => (r.rewriteUrl ? [r.rewriteUrl.bind(r)] : []));
  const app: FastifyInstance = Fastify({
    // Only a process with an alias pays for the rewrite (a gateway alone has none).
    ...(rewrites.length > 0
      ? {
          rewriteUrl: (req: IncomingMessage) =>
            rewrites.reduce((url, rewrite) => rewrite(url), req.url ?? '/'),
        }
      : {}),
    loggerInstance: options.logger as FastifyBaseLogger,
    // The gateway's request id (SPEC 7.4) is this one: one id per request, not two.
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Per-request access logs cost the hot path two log lines; durations go to /metrics instead.
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: 'idle',
    // A request fastify cannot route at all (a path that is not valid percent-encoding) is still
    // answered in the envelope of the surface it was sent to, with a request id.
    frameworkErrors: (error, request, reply: FastifyReply) => {
      const err = new ServiceError(
        'bad_request',
        error.code === 'FST_ERR_BAD_URL'
          ? 'the request path is not valid: it has a malformed percent-encoding'
          : 'the request could not be routed',
      );
      reply
        .code(err.status)
        .header('x-svc-request-id', request.id)
        .send(envelopeFor(request.url, err, request.id));
    },
    clientErrorHandler: answerClientError,
    bodyLimit: options.bodyLimit ?? 32 * 1024 * 1024,
    return503OnClosing: true,
  });

  acceptEmptyJsonBodies(app);
  options.instrument?.(app);

  const duration = childrenOf(
    new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [options.metrics],
    }),
  );
  // Callback-style hooks: an async hook costs every request a promise and a microtask turn.
  app.addHook('onResponse', (request, reply, done) => {
    duration(request.method, request.routeOptions.url ?? 'unmatched', String(reply.statusCode)).observe(
      reply.elapsedTime / 1_000,
    );
    done();
  });

  // Node's close() ends only the connections idle at that moment; a keep-alive connection whose
  // request was in flight would then hold shutdown open for the keep-alive timeout. Tell it to close.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    const echoed = echoedRequestId(request);
    if (echoed !== null) reply.header('x-request-id', echoed);
    done(null, payload);
  });

  // Every route of this process, as registered, for /openapi.json: the process's own (role
  // `server`) and each role's (their scopes below name them).
  // A role's route is seen twice, by this hook and its scope's (which names the role and tells
  // options.onRoute); the scope's wins whichever runs first.
  const documented = new Map<string, DocumentedRoute>();
  const note = (role: string | null, route: RouteOptions) => {
    const doc = (route.config as { openapi?: RouteDoc } | undefined)?.openapi;
    for (const method of [route.method].flat()) {
      const key = `${method} ${route.url}`;
      if (role === null && documented.has(key)) continue;
      documented.set(key, {
        role: role ?? 'server',
        method,
        url: route.url,
        ...(doc ? { doc } : {}),
      });
      if (role !== null) options.onRoute?.({ role, method, url: route.url });
    }
  };
  app.addHook('onRoute', (route) => note(null, route));
  let openapi: string | null = null;
  app.get('/openapi.json', async (_request, reply) => {
    openapi ??= JSON.stringify(openApiDocument([...documented.values()]));
    return reply.type('application/json').send(openapi);
  });

  // Kubernetes' habit (issue 28). Liveness: the process answers. Readiness: it takes requests,
  // which it does from the moment it listens (only after every role's caches and snapshots are
  // loaded, Role.prepare) until its drain begins (then it stops listening, and a request read
  // before that is told `draining`). Not the dependencies: a gateway serves through an outage of
  // the bus (the spool) or the object store, and a shared dependency's outage must not take every
  // pod out of its Service at once. /healthz reports each dependency.
  app.get('/livez', async (_request, reply) => reply.send({ status: 'alive' }));
  app.get('/readyz', async (_request, reply) =>
    closing ? reply.code(503).send({ status: 'draining' }) : reply.send({ status: 'ready' }),
  );

  app.get('/healthz', async (_request, reply) => {
    const report = await options.health.report();
    return reply.code(report.ok ? 200 : 503).send({
      status: report.ok ? 'ok' : 'degraded',
      roles: options.roles.map((r) => r.name),
      dependencies: report.dependencies,
    });
  });

  app.get('/metrics', async (_request, reply) => {
    const [own, more] = await Promise.all([
      options.ownMetrics?.() ?? options.metrics.metrics(),
      options.moreMetrics?.() ?? '',
    ]);
    return reply.type(options.metrics.contentType).send(more ? `${own}\n${more}` : own);
  });

  // Routes of roles render their own dialect's envelope; this is the fallback for everything else.
  app.setErrorHandler((err, request, reply) => {
    if (err instanceof ServiceError) return reply.code(err.status).send(renderApiError(err));
    const { statusCode, code, message } = err as { statusCode?: number; code?: string; message?: string };
    if (statusCode && statusCode >= 400 && statusCode < 500) {
      return reply.code(statusCode).send({ error: code ?? 'bad_request', message: message ?? 'bad request' });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ error: 'internal_error', message: 'internal error' });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: 'not_found', message: `no route for ${request.method} ${request.url.split('?')[0]}` }),
  );

  for (const role of options.roles) {
    const { http } = role;
    if (!http) continue;
    await app.register(async (scope) => {
      scope.addHook('onRoute', (route) => note(role.name, route));
      await http(scope);
    });
  }
  return app;
};

/**
 * A caller's own `x-request-id`, which goes back on its answer (the habit of proxies and gateways)
 * when it is a correlation id worth echoing (lib/ids.ts); the service's own id is
 * `x-svc-request-id`. Every answer echoes it on its way out (onSend); a stream, which writes its
 * own headers, echoes it when it opens (gateway/client.ts).
 */
export const echoedRequestId = (request: FastifyRequest): string | null => {
  const id = request.headers['x-request-id'];
  return isCorrelationId(id) ? id : null;
};

/** The path of a request line as far as Node's parser received it (latin1, as on the wire). */
const pathOfRawRequest = (raw: unknown): string | undefined =>
  Buffer.isBuffer(raw)
    ? /^[A-Z]+ ([^ \r\n]+)/.exec(raw.subarray(0, 8192).toString('latin1'))?.[1]
    : undefined;

/** The response in flight on a connection, if any (Node keeps it on the socket). */
const inFlight = (socket: Socket) =>
  (socket as Socket & { _httpMessage?: { headersSent?: boolean; req?: { url?: string } } })._httpMessage;

/**
 * A request Node's HTTP parser refuses before fastify sees it (a raw byte outside printable ASCII
 * in the path or query, a malformed request or header line, headers over the limit, a request too
 * slow to arrive) is answered, as frameworkErrors are, in the envelope of the surface its path
 * names (the refused bytes' request line, else the request in flight; /api when neither shows
 * one), with a request id, and the connection is closed: fastify's default answers in a shape of
 * its own (SPEC 7.1, 7.2, 7.6).
 */
const answerClientError = (err: ConnectionError & { reason?: unknown }, socket: Socket) => {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const problem =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ServiceError('bad_request', 'the request did not arrive in time', {
          status: 408,
          displayCode: 'request_timeout',
        })
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ServiceError('bad_request', 'the request headers are too large', {
            status: 431,
            displayCode: 'request_header_fields_too_large',
          })
        : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? new ServiceError('payload_too_large', 'the request body has chunk extensions over the limit')
          : new ServiceError(
              'bad_request',
              `the request is not valid HTTP/1.1 (${typeof err.reason === 'string' ? err.reason : err.code})${
                err.code === 'HPE_INVALID_URL'
                  ? ': percent-encode bytes outside printable ASCII in the path and query'
                  : ''
              }`,
            );
  const response = inFlight(socket);
  // As Node's own answer: never once a response in flight on this connection has begun, so that
  // the two are not interleaved.
  if (!socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = newId('req');
  const body = JSON.stringify(
    envelopeFor(pathOfRawRequest(err.rawPacket) ?? response?.req?.url, problem, requestId),
  );
  socket.end(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nx-svc-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
};

/** The error envelope of the surface a path belongs to: /v1 (SPEC 7.1), /alt (SPEC 7.2), else /api. */
export const envelopeFor = (url: string | undefined, err: ServiceError, requestId?: string) =>
  url?.startsWith('/v1/')
    ? renderPrimaryError(err, requestId)
    : url?.startsWith('/alt/')
      ? renderAltError(err)
      : renderApiError(err);

/**
 * A request that carries no body is never refused for its `content-type` header: many HTTP client
 * wrappers send `application/json` on every DELETE and POST, and fastify's own parser answers an
 * empty JSON body with a 400 of its own before the route can answer. Here an empty body is parsed
 * as no body (`undefined`), so the route decides in its own dialect's envelope; any other body goes
 * through fastify's default parser, prototype-poisoning checks included.
 */
const acceptEmptyJsonBodies = (app: FastifyInstance): void => {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text === '') return done(null, undefined);
    parseJson(request, text, done);
  });
};
