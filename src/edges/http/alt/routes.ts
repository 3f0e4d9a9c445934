import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { altDialect } from '../../../gateway/render/alt-dialect.js';
import type { Route } from '../../../providers/contract.js';
import { callGateway, type GatewayEdgeDeps } from '../gateway/client.js';
import { parseAltBody } from './parse.js';

/** alt-beta as received: several headers join as one list, each value kept verbatim (SPEC 9.2). */
const betaOf = (request: FastifyRequest): string | null => {
  const beta = request.headers['anthropic-beta'];
  if (beta === undefined) return null;
  return Array.isArray(beta) ? beta.join(',') : beta;
};

/** POST /alt/v1/messages and /alt/v1/messages/count_tokens (SPEC 4.2). */
export function registerAltRoutes(alt: FastifyInstance, deps: GatewayEdgeDeps): void {
  alt.post('/v1/messages', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    altMessages(deps, request, reply, '/alt/v1/messages'),
  );
  alt.post('/v1/messages/count_tokens', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    altMessages(deps, request, reply, '/alt/v1/messages/count_tokens'),
  );
}

/**
 * The alternate dialect in (messages, or the same body counted: SPEC 4.2 rules 2 and 9), one
 * request through the gateway, its answer out.
 */
export function altMessages(
  deps: GatewayEdgeDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  route: Route,
): Promise<FastifyReply> {
  const canonical = parseAltBody(request.body, { route, beta: betaOf(request) });
  return callGateway(deps, request, reply, canonical, altDialect);
}
