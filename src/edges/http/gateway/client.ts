import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Files } from '../../../files/service.js';
import type { Dialect } from '../../../gateway/render/dialect.js';
import {
  type ClientPort,
  type FrameSink,
  type GatewayAnswer,
  type GatewayDeps,
  serveRequest,
} from '../../../gateway/request.js';
import { newId } from '../../../lib/ids.js';
import type { CanonicalRequest } from '../../../providers/contract.js';
import type { VectorStores } from '../../../vector-stores/service.js';
import { echoedRequestId } from '../server.js';
import { EventStreamWriter } from './event-stream.js';
import { receivedBytes } from './received-bytes.js';

/** The model edges' dependencies: the request path's, and the body size cap of their routes. */
export interface GatewayEdgeDeps extends GatewayDeps {
  bodyLimit: number;
  /** /v1/files (src/files); absent or null where the process has no object store: those routes answer 503. */
  files?: Files | null;
  /**
   * /v1/vector_stores (src/vector-stores); absent or null where the process has no analytics store
   * to keep chunks in: those routes answer 503.
   */
  vectorStores?: VectorStores | null;
}

export const REQUEST_ID_HEADER = 'x-svc-request-id';

/** The caller's HTTP connection as the request path's client port. */
class ReplyClient implements ClientPort {
  private onClose: (() => void) | null = null;

  constructor(
    private readonly reply: FastifyReply,
    private readonly requestId: string,
  ) {}

  watch(abort: AbortController): void {
    const res = this.reply.raw;
    this.onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.on('close', this.onClose);
  }

  release(): void {
    if (this.onClose) this.reply.raw.off('close', this.onClose);
  }

  openStream(capture: string[] | null): FrameSink {
    // The caller's own x-request-id, echoed here: a hijacked reply passes no onSend hook.
    const echoed = echoedRequestId(this.reply.request);
    this.reply.hijack();
    const res = this.reply.raw;
    if (echoed !== null) res.setHeader('x-request-id', echoed);
    // No connection header of our own: Node keeps the connection alive unless the caller sent
    // Connection: close, and then says close and closes it after the stream (RFC 9112 9.6).
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      [REQUEST_ID_HEADER]: this.requestId,
    });
    return new EventStreamWriter(res, capture);
  }
}

/**
 * One request, its body parsed into `canonical`, through the gateway's one entry; its answer written
 * back. The request id is the one the server named the request with (genReqId), not a second one;
 * from here on every answer carries it (SPEC 7.4), errors before this point (authentication, body
 * shape) do not.
 */
export async function callGateway(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  canonical: CanonicalRequest,
  dialect: Dialect,
): Promise<FastifyReply> {
  const requestId = request.id.startsWith('req_') ? request.id : newId('req');
  reply.header(REQUEST_ID_HEADER, requestId);
  const answer = await serveRequest(deps, {
    canonical,
    dialect,
    key: request.apiKey!,
    requestId,
    requestBytes: receivedBytes(request),
    tracingHeader: request.headers['svc-enable-tracing'],
    sessionHeader: request.headers['x-svc-session-id'],
    traceparentHeader: request.headers.traceparent,
    client: new ReplyClient(reply, requestId),
  });
  return writeAnswer(reply, answer);
}

/** Writes the request path's answer; a streamed reply is already written, and a gone client gets none. */
function writeAnswer(reply: FastifyReply, answer: GatewayAnswer): FastifyReply {
  if (answer.kind !== 'json') return reply;
  if (answer.shouldRetry !== null) retrySignals(reply, answer.shouldRetry, answer.retryAfterMs);
  return reply.code(answer.status).type('application/json').send(answer.body);
}

/**
 * The retry signals of a failed answer (the conventions of the official SDKs): `x-should-retry`
 * says whether trying again may help; a wait goes out as `Retry-After` in whole seconds (SPEC 7.4)
 * and `retry-after-ms` beside it.
 */
export const retrySignals = (
  reply: FastifyReply,
  shouldRetry: boolean,
  retryAfterMs: number | null,
): void => {
  reply.header('x-should-retry', shouldRetry ? 'true' : 'false');
  if (retryAfterMs === null) return;
  reply.header('retry-after', String(Math.max(1, Math.ceil(retryAfterMs / 1_000))));
  reply.header('retry-after-ms', String(Math.max(0, Math.round(retryAfterMs))));
};
