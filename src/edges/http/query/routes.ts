import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../../lib/errors.js';
import { bodyUrls } from '../../../query/body.js';
import { recordFeedback } from '../../../query/feedback.js';
import {
  findRequest,
  listRequests,
  requestFacets,
  sessionTimeline,
  shapeRequest,
} from '../../../query/requests.js';
import { listSessions, sessionFacets } from '../../../query/sessions.js';
import { overview, usage } from '../../../query/usage.js';
import { parsePage, parseWindow } from '../../../query/window.js';
import { authorOf, paramOf, type QueryHttpOptions, queryOf, scopeOf } from './context.js';
import { registerFinanceRoutes } from './finance-routes.js';

const feedbackBody = z.strictObject({
  rating: z.enum(['up', 'down']),
  comment: z.string().max(4000).nullish(),
});

/** Query HTTP API of SPEC 4.5 (trace routes excepted): every route reads one tenant's rows. */
export const registerQueryRoutes = (app: FastifyInstance, o: QueryHttpOptions): void => {
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
    const row = await findRequest(a, s.orgId, s.projectId, paramOf(request, 'request_id'));
    if (!row) throw new ServiceError('not_found', 'request not found');
    const { attempts, tool_summary, ...rest } = row;
    const visible = Object.fromEntries(Object.entries(rest).filter(([k]) => !/^(req|res)_body_/.test(k)));
    return {
      ...shapeRequest(visible),
      attempts: JSON.parse(String(attempts ?? '[]')),
      tool_summary: JSON.parse(String(tool_summary ?? '{}')),
      // Any caller in scope of the org may read its payloads; the URLs are themselves authenticated.
      body_urls: bodyUrls(row),
    };
  });

  app.post('/api/requests/:request_id/feedback', async (request, reply) => {
    const s = await scopeOf(o, request);
    const parsed = feedbackBody.safeParse(request.body ?? {});
    if (!parsed.success)
      throw new ServiceError(
        'bad_request',
        `invalid feedback: ${parsed.error.issues[0]?.message ?? 'bad body'}`,
        {
          param: String(parsed.error.issues[0]?.path[0] ?? 'rating'),
        },
      );
    const requestId = paramOf(request, 'request_id');
    if (!(await findRequest(a, s.orgId, s.projectId, requestId)))
      throw new ServiceError('not_found', 'request not found');
    const saved = await recordFeedback(
      o.pool,
      {
        request_id: requestId,
        org_id: s.orgId,
        author: authorOf(s.caller),
        rating: parsed.data.rating,
        comment: parsed.data.comment ?? null,
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
