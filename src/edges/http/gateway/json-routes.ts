import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { primaryDialect } from '../../../gateway/render/dialect.js';
import type { CanonicalRequest } from '../../../providers/contract.js';
import { callGateway, type GatewayEdgeDeps } from './client.js';
import {
  parseEmbeddingsBody,
  parseImageGenerationBody,
  parseModerationsBody,
  parseResponsesBody,
} from './json-bodies.js';

/** POST /v1/embeddings, /v1/responses and /v1/moderations (SPEC 4.1), buffered and relayed. */
export function registerJsonOperationRoutes(v1: FastifyInstance, deps: GatewayEdgeDeps): void {
  v1.post('/embeddings', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseEmbeddingsBody),
  );
  v1.post('/responses', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseResponsesBody),
  );
  v1.post('/moderations', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseModerationsBody),
  );
  v1.post('/images/generations', { bodyLimit: deps.bodyLimit }, (request, reply) =>
    jsonOperation(deps, request, reply, parseImageGenerationBody),
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
