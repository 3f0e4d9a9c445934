import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import type { GatewayEdgeDeps } from './client.js';

/** /v1/files (SPEC 4.1): not built yet, 501 after auth. */
export const registerFileRoutes = (scope: FastifyInstance, _deps: GatewayEdgeDeps): void => {
  for (const method of ['POST', 'GET'] as const)
    scope.route({
      method,
      url: '/files',
      handler: async () => {
        throw new ServiceError('not_implemented', `${method} /v1/files is not implemented yet in this gateway build`);
      },
    });
};
