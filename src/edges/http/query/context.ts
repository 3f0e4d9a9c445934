import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AnalyticsStore } from '../../../analytics/port.js';
import type { Pool } from '../../../events/postgres/pool.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ObjectStore } from '../../../objects/port.js';
import type { LiveOpened, LiveSessions } from '../../../query/live.js';
import { type Caller, type OrgScope, orgScope, type ScopeDeps } from '../../../query/scope.js';

export interface QueryHttpOptions extends ScopeDeps {
  analytics: AnalyticsStore;
  objects: ObjectStore | null;
  pool: Pool;
  /** Hard cap on export rows; more answers 400 (SPEC 7.6 rule 3). */
  maxExportRows: number;
  maxExportDays: number;
  /** Live session streams, shared per session and counted per session and organization. */
  live: LiveSessions;
}

/** What each query route is given: the options, and the caller the family's hook authenticated. */
export interface QueryRouteContext extends QueryHttpOptions {
  caller: (request: FastifyRequest) => Caller;
}

export type Query = Record<string, string | undefined>;

export const queryOf = (request: FastifyRequest): Query => {
  const out: Query = {};
  for (const [k, v] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    if (typeof v === 'string') out[k] = v;
    else if (v !== undefined)
      throw new ServiceError('bad_request', `query parameter ${k} must be given once`, { param: k });
  }
  return out;
};

export const paramOf = (request: FastifyRequest, name: string): string =>
  (request.params as Record<string, string>)[name] ?? '';

/** Every org-scoped route: resolve org_id (+ project_id) against the authenticated caller's grants. */
export const scopeOf = async (o: QueryRouteContext, request: FastifyRequest): Promise<OrgScope> => {
  const q = queryOf(request);
  return orgScope(o, o.caller(request), q.org_id, q.project_id);
};

/** Who wrote feedback: a signed-in person by user id (an administrator's session too), else the admin token. */
export const authorOf = (c: Caller): string => (c.userId ? `user:${c.userId}` : 'admin');

/**
 * Answers a live stream that `open` admitted with the event-stream headers (the reply is the raw
 * stream from then on), or one it refused with 429 and Retry-After (SPEC 7.4: whole seconds, at
 * least one). A closed client leaves its feed at once; nothing else holds the stream open.
 */
export const startLiveStream = (reply: FastifyReply, opened: LiveOpened, what: string): void => {
  if (!opened.ok) {
    reply.header('retry-after', '1');
    throw new ServiceError(
      'rate_limit_error',
      `too many ${what} for this ${opened.limit} (at most ${opened.max} at once); close one and retry`,
    );
  }
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
  });
  raw.write(': connected\n\n');
  raw.on('close', opened.close);
};
