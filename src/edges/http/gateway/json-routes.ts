import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { primaryDialect } from '../../../gateway/render/dialect.js';
import type { CanonicalRequest } from '../../../providers/contract.js';
import { callGateway, type GatewayEdgeDeps } from './client.js';
import { parseEmbeddingsBody, parseResponsesBody } from './json-bodies.js';

/** POST /v1/embeddings and POST /v1/responses (SPEC 4.1), buffered bodies and relayed events. */
export function registerJsonOperationRoutes(v1: FastifyInstance, deps: GatewayEdgeDeps): void {
  v1.post('/embeddings', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseEmbeddingsBody),
  );
  v1.post('/responses', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseResponsesBody),
  );
}

/** A JSON operation's body in, one request through the gateway, its answer out. */
export function jsonOperation(
  deps: GatewayEdgeDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  parse: (body: unknown) => CanonicalRequest,
): Promise<FastifyReply> {
  const canonical = parse(request.body);
  return callGateway(deps, request, reply, canonical, primaryDialect);
}
