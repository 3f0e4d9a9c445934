import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { DeveloperTokens } from '../../../commands/auth/developer-tokens.js';
import { ServiceError } from '../../../lib/errors.js';
import type { SessionPrincipal } from '../../../projections/control-plane/reads.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';

const createBody = z.strictObject({
  org_id: z.string().min(1),
  project_id: z.string().min(1).nullable().optional(),
  name: z.string(),
});

/**
 * SPEC 4.4 and 7.6 rule 4: a console session is required (401, in the family's hook, before the
 * body is read), then validation (400/403), then 404. `sessionOf` is the signed-in user.
 */
export const registerDeveloperTokenRoutes = (
  app: FastifyInstance,
  tokens: DeveloperTokens,
  sessionOf: (request: FastifyRequest) => SessionPrincipal,
): void => {
  app.post('/api/auth/developer-tokens', routeDoc({ body: createBody }), async (request, reply) => {
    const user = sessionOf(request);
    const body = parseBody(createBody, request.body);
    return reply.code(201).send(await tokens.create(user, body));
  });

  app.get('/api/auth/developer-tokens', async (request) => {
    const user = sessionOf(request);
    const orgId = (request.query as Record<string, unknown>).org_id;
    if (typeof orgId !== 'string' || orgId.length === 0)
      throw new ServiceError('bad_request', 'query parameter org_id is required', { param: 'org_id' });
    return { data: await tokens.list(user, orgId) };
  });

  app.delete('/api/auth/developer-tokens/:token_id', async (request) => {
    const user = sessionOf(request);
    const { token_id } = request.params as { token_id: string };
    return tokens.revoke(user, token_id);
  });
};
