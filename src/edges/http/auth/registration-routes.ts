import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import type { AuthReads } from '../../../projections/auth/reads.js';

const required = (query: unknown, name: string): string => {
  const value = (query as Record<string, unknown>)[name];
  if (typeof value !== 'string' || value.length === 0)
    throw new ServiceError('bad_request', `query parameter ${name} is required`, { param: name });
  return value;
};

/** SPEC 4.4: validity, expiry and remaining uses only; never an e-mail address or a digest. */
export const registerRegistrationStatusRoutes = (
  app: FastifyInstance,
  reads: AuthReads,
  clock: () => Date,
): void => {
  app.get('/api/auth/registration-invite/status', async (request) =>
    reads.inviteStatus(required(request.query, 'invite'), clock()),
  );
  app.get('/api/auth/registration-code/status', async (request) =>
    reads.codeStatus(required(request.query, 'code'), clock()),
  );
};
