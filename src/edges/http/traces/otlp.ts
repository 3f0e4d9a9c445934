import { gunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../../lib/bearer.js';
import { type IntakeResult, IntakeUnavailableError } from '../../../projections/traces/intake.js';
import type { OtlpExport } from '../../../traces/model.js';
import {
  decodeOtlpJson,
  decodeOtlpProtobuf,
  encodeExportResponseProtobuf,
  encodeStatusProtobuf,
  exportResponseJson,
  OtlpDecodeError,
  OtlpLimitError,
  statusJson,
} from '../../../traces/otlp.js';

/**
 * `POST /v1/traces` (SPEC 4.3, 5; OTLP/HTTP, https://opentelemetry.io/docs/specs/otlp/#otlphttp):
 * an ExportTraceServiceRequest in protobuf (`application/x-protobuf`) or OTLP JSON
 * (`application/json`), gzip-encoded or not, under a project's trace ingest key as a bearer token
 * or in `x-api-key`. The answer speaks the request's encoding: 200 with an ExportTraceServiceResponse
 * (its partial_success counts the spans refused and says why), or a google.rpc.Status with 400 for
 * an undecodable body, 401 for a bad key, 413 over the size cap, 415 for another content type,
 * 429 with Retry-After while the intake is saturated, 503 with Retry-After while the bus or the
 * object store is away (both retryable for an OTLP exporter).
 */

export interface TraceKeyIdentity {
  orgId: string;
  projectId: string;
  /** Full payload capture is on for the key's project or organization. */
  capture: boolean;
}

export interface OtlpRouteDeps {
  /** The project of a live trace ingest key, else null. */
  verifyKey(secret: string): Promise<TraceKeyIdentity | null>;
  accept(input: { export: OtlpExport; identity: TraceKeyIdentity }): Promise<IntakeResult>;
  /** Bytes of a body as sent (compressed) and once decompressed. */
  maxBodyBytes: number;
  /** Exports being taken in at once; one more is answered 429. */
  maxInFlight: number;
  /**
   * Body bytes being taken in at once, so a burst of large exports cannot exhaust the memory of the
   * process that also serves the gateway; one more is answered 429 (one export is always let in).
   */
  maxInFlightBytes: number;
  onAccepted?(result: IntakeResult): void;
  onError?(err: unknown): void;
}

/** google.rpc.Code values for the Status of an error answer. */
const GRPC = { invalidArgument: 3, resourceExhausted: 8, internal: 13, unavailable: 14, unauthenticated: 16 };

class OtlpHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

const isProtobuf = (request: FastifyRequest): boolean => {
  const type = request.headers['content-type'] ?? '';
  return /^application\/(x-)?protobuf\b/i.test(type);
};
const isJson = (request: FastifyRequest): boolean =>
  /^application\/json\b/i.test(request.headers['content-type'] ?? '');

const secretOf = (request: FastifyRequest): string | null => {
  const auth = request.headers.authorization;
  if (typeof auth === 'string') return bearerToken(auth);
  const key = request.headers['x-api-key'];
  return typeof key === 'string' && key.length > 0 ? key : null;
};

const gunzipLimited = (data: Buffer, max: number): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    gunzip(data, { maxOutputLength: max }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        return reject(
          new OtlpHttpError(413, GRPC.resourceExhausted, `the decompressed body is over ${max} bytes`),
        );
      reject(new OtlpHttpError(400, GRPC.invalidArgument, 'the gzip body does not decompress'));
    });
  });

const sendStatus = (request: FastifyRequest, reply: FastifyReply, e: OtlpHttpError): FastifyReply => {
  if (e.retryAfter !== undefined) reply.header('retry-after', String(e.retryAfter));
  reply.code(e.status);
  return isProtobuf(request)
    ? reply.type('application/x-protobuf').send(Buffer.from(encodeStatusProtobuf(e.code, e.message)))
    : reply.type('application/json').send(statusJson(e.code, e.message));
};

/** Verified keys are remembered this long; a revoked key stops working within it. */
const KEY_CACHE_MS = 5_000;
const KEY_CACHE_MAX = 10_000;

export const registerOtlpTraceRoute = async (app: FastifyInstance, deps: OtlpRouteDeps): Promise<void> => {
  const keys = new Map<string, { identity: TraceKeyIdentity; until: number }>();
  const verify = async (secret: string): Promise<TraceKeyIdentity | null> => {
    const now = Date.now();
    const hit = keys.get(secret);
    if (hit && hit.until > now) return hit.identity;
    const identity = await deps.verifyKey(secret);
    if (keys.size >= KEY_CACHE_MAX) keys.clear();
    // Only a key that verified is remembered: a mistyped key costs a lookup, never a stale refusal.
    if (identity) keys.set(secret, { identity, until: now + KEY_CACHE_MS });
    else keys.delete(secret);
    return identity;
  };
  let inFlight = 0;
  let inFlightBytes = 0;

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: deps.maxBodyBytes },
      (_request, body, done) => done(null, body),
    );
    scope.setErrorHandler((err, request, reply) => {
      if (err instanceof OtlpHttpError) return sendStatus(request, reply, err);
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 413)
        return sendStatus(
          request,
          reply,
          new OtlpHttpError(413, GRPC.resourceExhausted, `the body is over ${deps.maxBodyBytes} bytes`),
        );
      if (status !== undefined && status >= 400 && status < 500)
        return sendStatus(
          request,
          reply,
          new OtlpHttpError(status, GRPC.invalidArgument, err instanceof Error ? err.message : String(err)),
        );
      deps.onError?.(err);
      return sendStatus(request, reply, new OtlpHttpError(500, GRPC.internal, 'the trace intake failed'));
    });

    /**
     * The key, then the load, before the body is read: a refused exporter costs no upload. The load
     * is counted from here until the answer is sent or the connection closes, so a body being read
     * counts as much as one being decoded (each at its Content-Length, or the cap without one).
     */
    const admit = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const secret = secretOf(request);
      if (secret === null)
        throw new OtlpHttpError(
          401,
          GRPC.unauthenticated,
          'a trace ingest key is required (Authorization: Bearer <key>)',
        );
      let identity: TraceKeyIdentity | null;
      try {
        identity = await verify(secret);
      } catch (err) {
        // The keys' database is away: a retryable answer, so the exporter keeps its spans.
        deps.onError?.(err);
        throw new OtlpHttpError(
          503,
          GRPC.unavailable,
          'the trace ingest key cannot be checked now; retry later',
          5,
        );
      }
      if (!identity) throw new OtlpHttpError(401, GRPC.unauthenticated, 'the trace ingest key is not valid');
      (request as FastifyRequest & { traceKey?: TraceKeyIdentity }).traceKey = identity;
      const declared = Number(request.headers['content-length']);
      const bytes =
        Number.isSafeInteger(declared) && declared >= 0
          ? Math.min(declared, deps.maxBodyBytes)
          : deps.maxBodyBytes;
      if (inFlight >= deps.maxInFlight || (inFlight > 0 && inFlightBytes + bytes > deps.maxInFlightBytes))
        throw new OtlpHttpError(429, GRPC.resourceExhausted, 'the trace intake is saturated; retry later', 1);
      inFlight++;
      inFlightBytes += bytes;
      reply.raw.once('close', () => {
        inFlight--;
        inFlightBytes -= bytes;
      });
    };

    scope.post('/v1/traces', {
      onRequest: admit,
      handler: async (request, reply) => {
        const identity = (request as FastifyRequest & { traceKey?: TraceKeyIdentity }).traceKey!;
        const protobuf = isProtobuf(request);
        if (!protobuf && !isJson(request))
          throw new OtlpHttpError(
            415,
            GRPC.invalidArgument,
            'content-type must be application/x-protobuf or application/json',
          );
        let body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const encoding = String(request.headers['content-encoding'] ?? 'identity')
          .trim()
          .toLowerCase();
        if (encoding === 'gzip') body = await gunzipLimited(body, deps.maxBodyBytes);
        else if (encoding !== 'identity' && encoding !== '')
          throw new OtlpHttpError(
            415,
            GRPC.invalidArgument,
            `content-encoding ${encoding} is not supported (gzip or none)`,
          );
        let decoded: OtlpExport;
        try {
          decoded = protobuf ? decodeOtlpProtobuf(body) : decodeOtlpJson(body.toString('utf8'));
        } catch (err) {
          if (err instanceof OtlpLimitError)
            throw new OtlpHttpError(413, GRPC.resourceExhausted, `the export is too large: ${err.message}`);
          if (err instanceof OtlpDecodeError)
            throw new OtlpHttpError(
              400,
              GRPC.invalidArgument,
              `the body is not an ExportTraceServiceRequest: ${err.message}`,
            );
          throw err;
        }
        let result: IntakeResult;
        try {
          result = await deps.accept({ export: decoded, identity });
        } catch (err) {
          if (err instanceof IntakeUnavailableError) {
            deps.onError?.(err);
            throw new OtlpHttpError(
              503,
              GRPC.unavailable,
              'the trace pipeline is unavailable; retry later',
              5,
            );
          }
          throw err;
        }
        deps.onAccepted?.(result);
        const partial =
          result.rejectedSpans > 0
            ? {
                rejectedSpans: result.rejectedSpans,
                errorMessage: result.rejections.join('; ').slice(0, 1_000),
              }
            : undefined;
        reply.code(200);
        return protobuf
          ? reply.type('application/x-protobuf').send(Buffer.from(encodeExportResponseProtobuf(partial)))
          : reply.type('application/json').send(exportResponseJson(partial));
      },
    });
    // OTLP/HTTP defines POST only; another method gets a Status, not the gateway's 404.
    scope.route({
      method: ['GET', 'PUT', 'PATCH', 'DELETE'],
      url: '/v1/traces',
      handler: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new OtlpHttpError(405, GRPC.invalidArgument, 'POST an ExportTraceServiceRequest to /v1/traces');
      },
    });
  });
};
