import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import {
  checkArtifactSignature,
  DEFAULT_ARTIFACT_URL_TTL_SECONDS,
  locateArtifact,
  objectArtifactUrl,
  readVerifiedArtifact,
  requestBodyUrl,
} from '../../../query/trace-artifacts.js';
import type { TraceLiveSessions } from '../../../query/trace-live.js';
import {
  requestTraceInfo,
  sessionRequestTraces,
  sessionTraces,
  toolTrace,
} from '../../../query/trace-summaries.js';
import { findArtifact, requestTraceTree, spanDetail, traceTree } from '../../../query/traces.js';
import { parsePage } from '../../../query/window.js';
import { publicApiFamily } from '../api-family.js';
import {
  paramOf,
  type QueryHttpOptions,
  type QueryRouteContext,
  queryOf,
  scopeOf,
  startLiveStream,
} from './context.js';

/** What the trace routes need beyond the query options (the query role passes them). */
export interface TraceRouteDeps {
  /** HMAC key of signed artifact URLs: artifactUrlKey(masterKey) (query/trace-artifacts.ts). */
  artifactUrlKey: Buffer;
  /** Seconds a signed artifact URL is valid (the HMAC one and a store's presigned one); default 300. */
  artifactUrlTtlSeconds?: number;
  /** Live trace streams, shared per session and counted per session and organization. */
  live: TraceLiveSessions;
}

const notFound = (what: string) => new ServiceError('not_found', `${what} not found`);

/** The longest Last-Event-ID taken (ids are hex digests or request ids). */
const MAX_LAST_EVENT_ID = 256;

/**
 * The nine trace routes of SPEC 4.5, inside the query family (authenticated before anything is
 * read; org_id required and resolved against the caller). A trace, span, artifact, session or
 * request of another tenant answers exactly as an unknown one: 404, or an empty page.
 */
export const traceRoutes = (app: FastifyInstance, o: QueryRouteContext, deps: TraceRouteDeps): void => {
  const a = o.analytics;
  const now = () => o.now?.() ?? new Date();

  app.get('/api/traces/:trace_id/tree', async (request) => {
    const s = await scopeOf(o, request);
    const tree = await traceTree(a, s, paramOf(request, 'trace_id'));
    if (!tree) throw notFound('trace');
    return tree;
  });

  app.get('/api/sessions/:session_id/traces', async (request) => {
    const s = await scopeOf(o, request);
    return sessionTraces(a, s, { sessionId: paramOf(request, 'session_id'), ...parsePage(queryOf(request)) });
  });

  app.get('/api/requests/:request_id/trace', async (request) => {
    const s = await scopeOf(o, request);
    const tree = await requestTraceTree(a, s, paramOf(request, 'request_id'));
    if (!tree) throw notFound('trace of this request');
    return tree;
  });

  app.get('/api/traces/:trace_id/spans/:span_id', async (request) => {
    const s = await scopeOf(o, request);
    const span = await spanDetail(a, s, paramOf(request, 'trace_id'), paramOf(request, 'span_id'));
    if (!span) throw notFound('span');
    return span;
  });

  app.get('/api/traces/:trace_id/artifacts/:artifact_id', async (request) => {
    const s = await scopeOf(o, request);
    const traceId = paramOf(request, 'trace_id');
    const artifactId = paramOf(request, 'artifact_id');
    const artifact = await findArtifact(a, s, traceId, artifactId);
    if (!artifact) throw notFound('artifact');
    // Any caller in scope of the org may read its payloads (as body_urls on /api/requests/:id).
    const where = locateArtifact(String(artifact.object_key ?? ''));
    if (where.kind === 'request_body')
      return { ...artifact, url: requestBodyUrl(s.orgId, where.requestId, where.side), url_expires_at: null };
    if (where.kind === 'object') {
      // The object store's own presigned URL when it has one (S3), else the content route below.
      const signed = await objectArtifactUrl(
        o.objects,
        deps.artifactUrlKey,
        { orgId: s.orgId, traceId, artifactId },
        { key: where.key, compression: String(artifact.compression ?? 'none') },
        now(),
        deps.artifactUrlTtlSeconds ?? DEFAULT_ARTIFACT_URL_TTL_SECONDS,
      );
      return { ...artifact, url: signed.url, url_expires_at: signed.expires_at };
    }
    return { ...artifact, url: null, url_expires_at: null };
  });

  app.get('/api/sessions/:session_id/traces/live', async (request, reply) => {
    const s = await scopeOf(o, request);
    const last = request.headers['last-event-id'];
    if (Array.isArray(last) || (last !== undefined && last.length > MAX_LAST_EVENT_ID))
      throw new ServiceError(
        'bad_request',
        `Last-Event-ID must be one id of at most ${MAX_LAST_EVENT_ID} characters`,
      );
    const raw = reply.raw;
    const opened = deps.live.open(
      { orgId: s.orgId, projectId: s.projectId, sessionId: paramOf(request, 'session_id') },
      (frame) => raw.write(frame),
      last || undefined,
    );
    startLiveStream(reply, opened, 'live trace streams');
  });

  app.get('/api/traces/requests/:request_id', async (request) => {
    const s = await scopeOf(o, request);
    const info = await requestTraceInfo(a, s, paramOf(request, 'request_id'));
    if (!info) throw notFound('request');
    return info;
  });

  app.get('/api/traces/sessions/:session_id', async (request) => {
    const s = await scopeOf(o, request);
    return sessionRequestTraces(a, s, {
      sessionId: paramOf(request, 'session_id'),
      ...parsePage(queryOf(request), { limit: 100, max: 1000 }),
    });
  });

  app.get('/api/traces/tools/:request_id', async (request) => {
    const s = await scopeOf(o, request);
    const tools = await toolTrace(a, s, paramOf(request, 'request_id'));
    if (!tools) throw notFound('request');
    return tools;
  });
};

/** Nothing is uploaded to the content route. */
const CONTENT_BODY_LIMIT = 1024;

/**
 * GET /api/traces/:trace_id/artifacts/:artifact_id/content: the bytes of a stored artifact,
 * without a bearer: the URL's signature (from the metadata route) is the authorization. Refused
 * alike (403) when the signature does not match; 403 when it has expired; 404 when the org has no
 * such artifact. The bytes are sent only after their length and blake3 match the row.
 */
export const registerTraceContentRoute = async (
  app: FastifyInstance,
  options: QueryHttpOptions,
  deps: TraceRouteDeps,
): Promise<void> => {
  await app.register(async (scope) => {
    publicApiFamily(scope, { bodyLimit: CONTENT_BODY_LIMIT });
    scope.get('/api/traces/:trace_id/artifacts/:artifact_id/content', async (request, reply) => {
      const q = queryOf(request);
      const name = {
        orgId: q.org_id ?? '',
        traceId: paramOf(request, 'trace_id'),
        artifactId: paramOf(request, 'artifact_id'),
      };
      const check = checkArtifactSignature(
        deps.artifactUrlKey,
        name,
        q.expires,
        q.signature,
        options.now?.() ?? new Date(),
      );
      if (check === 'invalid') throw new ServiceError('forbidden', 'invalid artifact URL signature');
      if (check === 'expired')
        throw new ServiceError(
          'forbidden',
          'this artifact URL has expired; ask the artifact route for a new one',
        );
      if (!options.objects)
        throw new ServiceError('service_unavailable', 'the object store is not configured');
      const artifact = await findArtifact(
        options.analytics,
        { orgId: name.orgId, projectId: null },
        name.traceId,
        name.artifactId,
      );
      if (!artifact || locateArtifact(String(artifact.object_key ?? '')).kind !== 'object')
        throw notFound('artifact');
      const bytes = await readVerifiedArtifact(options.objects, artifact);
      const mime = String(artifact.mime_type ?? '');
      return (
        reply
          .header('cache-control', 'private, no-store')
          .header('x-svc-artifact-blake3', String(artifact.blake3_hash))
          // Tenant content on the API's origin: never sniffed, never run as a page.
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .type(/^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w-]+=[\w.-]+)*$/.test(mime) ? mime : 'application/octet-stream')
          .send(bytes)
      );
    });
  });
};
