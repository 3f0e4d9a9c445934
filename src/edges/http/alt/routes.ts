import type { FastifyInstance, FastifyRequest } from 'fastify';
import { altDialect } from '../../../gateway/render/alt-dialect.js';
import { routeRules } from '../../../gateway/route-rules.js';
import type { Route } from '../../../providers/contract.js';
import { receivedBytes } from '../gateway/received-bytes.js';
import { type GatewayDeps, serveCompletion } from '../gateway/serve.js';
import { serveCountTokens } from './count-tokens.js';
import { parseAltBody } from './parse.js';

/** alt-beta as received: several headers join as one list, each value kept verbatim (SPEC 9.2). */
const betaOf = (request: FastifyRequest): string | null => {
  const beta = request.headers['anthropic-beta'];
  if (beta === undefined) return null;
  return Array.isArray(beta) ? beta.join(',') : beta;
};

const parse = (request: FastifyRequest, route: Route) =>
  parseAltBody(request.body, { route, beta: betaOf(request) });

/** POST /alt/v1/messages and /alt/v1/messages/count_tokens (SPEC 4.2; issue 7). */
export const registerAltRoutes = (alt: FastifyInstance, deps: GatewayDeps): void => {
  alt.post('/v1/messages', { bodyLimit: deps.bodyLimit }, async (request, reply) => {
    const canonical = parse(request, '/alt/v1/messages');
    return serveCompletion(request, reply, deps, {
      canonical,
      dialect: altDialect,
      capability: 'chat',
      operation: 'messages',
      requestBytes: receivedBytes(request),
      route: (candidates) => routeRules(canonical, candidates),
    });
  });
  alt.post('/v1/messages/count_tokens', { bodyLimit: deps.bodyLimit }, async (request, reply) =>
    serveCountTokens(
      request,
      reply,
      deps,
      parse(request, '/alt/v1/messages/count_tokens'),
      receivedBytes(request),
    ),
  );
};
