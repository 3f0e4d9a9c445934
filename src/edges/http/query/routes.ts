import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../../lib/errors.js';
import { bodyUrls } from '../../../query/body.js';
import { recordFeedback } from '../../../query/feedback.js';
import {
  findRequest,
  listRequests,
  requestCostLines,
  requestFacets,
  sessionTimeline,
  shapeRequest,
} from '../../../query/requests.js';
import { identify } from '../../../query/scope.js';
import { listSessions, sessionFacets } from '../../../query/sessions.js';
import { overview, usage } from '../../../query/usage.js';
import { parsePage, parseWindow } from '../../../query/window.js';
import { authenticatedApiFamily } from '../api-family.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';
import { authorizationOf } from '../session-credential.js';
import {
  authorOf,
  paramOf,
  type QueryHttpOptions,
  type QueryRouteContext,
  queryOf,
  scopeOf,
} from './context.js';
import { registerFinanceRoutes } from './finance-routes.js';
import { registerTraceContentRoute, type TraceRouteDeps, traceRoutes } from './trace-routes.js';

const feedbackBody = z.strictObject({
  rating: z.enum(['up', 'down']),
  comment: z.string().max(4000).nullish(),
});

/** Query bodies are feedback: a rating and a comment of at most 4,000 characters (24 KB escaped). */
const QUERY_BODY_LIMIT = 32 * 1024;

/**
 * Query HTTP API of SPEC 4.5: every route reads one tenant's rows. The caller (a console session,
 * a personal developer token or the administrator; never a service API key, SPEC 5) is
 * authenticated before the body is read; each route then resolves its scope. The trace routes
 * (trace-routes.ts) are registered when `traces` is given, as the query role does; the signed
 * artifact content route sits outside the family, its URL's signature being its authorization.
 */
export const registerQueryRoutes = async (
  app: FastifyInstance,
  options: QueryHttpOptions & { traces?: TraceRouteDeps },
): Promise<void> => {
  await app.register(async (scope) => {
    const family = authenticatedApiFamily(scope, {
      bodyLimit: QUERY_BODY_LIMIT,
      authenticate: (request) => identify(options, authorizationOf(request)),
    });
    const context = { ...options, caller: family.caller };
    queryRoutes(scope, context);
    if (options.traces) traceRoutes(scope, context, options.traces);
  });
  if (options.traces) await registerTraceContentRoute(app, options, options.traces);
};

const queryRoutes = (app: FastifyInstance, o: QueryRouteContext): void => {
  const a = o.analytics;

  app.get('/api/requests', async (request) => {
    const s = await scopeOf(o, request);
    const q = queryOf(request);
    return listRequests(a, {
      orgIds: [s.orgId],
      projectId: s.projectId,
      window: parseWindow(q),
      filters: q,
      ...parsePage(q),
    });
  });

  app.get('/api/requests/facets', async (request) => {
    const s = await scopeOf(o, request);
    return requestFacets(a, {
      orgIds: [s.orgId],
      projectId: s.projectId,
      window: parseWindow(queryOf(request)),
    });
  });

  app.get('/api/requests/:request_id', async (request) => {
    const s = await scopeOf(o, request);
    const id = paramOf(request, 'request_id');
    const [row, costLines] = await Promise.all([
      findRequest(a, s.orgId, s.projectId, id),
      requestCostLines(a, s.orgId, s.projectId, id),
    ]);
    if (!row) throw new ServiceError('not_found', 'request not found');
    const { attempts, tool_summary, ...rest } = row;
    const visible = Object.fromEntries(Object.entries(rest).filter(([k]) => !/^(req|res)_body_/.test(k)));
    const trail = JSON.parse(String(attempts ?? '[]')) as {
      outcome: string;
      upstream_request_id?: string | null;
    }[];
    return {
      ...shapeRequest(visible),
      // The upstream's id of the answer the caller got, for a support ticket with the provider.
      upstream_request_id: trail.find((t) => t.outcome === 'success')?.upstream_request_id ?? null,
      attempts: trail,
      tool_summary: JSON.parse(String(tool_summary ?? '{}')),
      cost_lines: costLines,
      // Any caller in scope of the org may read its payloads; the URLs are themselves authenticated.
      body_urls: bodyUrls(row),
    };
  });

  app.post('/api/requests/:request_id/feedback', routeDoc({ body: feedbackBody }), async (request, reply) => {
    const s = await scopeOf(o, request);
    const feedback = parseBody(feedbackBody, request.body);
    const requestId = paramOf(request, 'request_id');
    if (!(await findRequest(a, s.orgId, s.projectId, requestId)))
      throw new ServiceError('not_found', 'request not found');
    const saved = await recordFeedback(
      o.pool,
      {
        request_id: requestId,
        org_id: s.orgId,
        author: authorOf(s.caller),
        rating: feedback.rating,
        comment: feedback.comment ?? null,
      },
      new Date(),
    );
    return reply.code(201).send(saved);
  });

  app.get('/api/sessions', async (request) => {
    const s = await scopeOf(o, request);
    const q = queryOf(request);
    return listSessions(a, {
      orgId: s.orgId,
      projectId: s.projectId,
      window: parseWindow(q),
      q: q.q,
      provider: q.provider,
      model: q.model,
      ...parsePage(q),
    });
  });

  app.get('/api/sessions/facets', async (request) => {
    const s = await scopeOf(o, request);
    return sessionFacets(a, {
      orgId: s.orgId,
      projectId: s.projectId,
      window: parseWindow(queryOf(request)),
    });
  });

  app.get('/api/sessions/:session_id/timeline', async (request) => {
    const s = await scopeOf(o, request);
    return sessionTimeline(a, {
      orgId: s.orgId,
      projectId: s.projectId,
      sessionId: paramOf(request, 'session_id'),
      ...parsePage(queryOf(request), { limit: 100, max: 1000 }),
    });
  });

  app.get('/api/usage', async (request) => {
    const s = await scopeOf(o, request);
    const q = queryOf(request);
    return usage(a, {
      orgId: s.orgId,
      projectId: s.projectId,
      window: parseWindow(q),
      granularity: q.granularity,
    });
  });

  app.get('/api/metrics/overview', async (request) => {
    const s = await scopeOf(o, request);
    return overview(a, { orgId: s.orgId, projectId: s.projectId, window: parseWindow(queryOf(request)) });
  });

  registerFinanceRoutes(app, o);
};
