import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads, SessionPrincipal } from '../../../projections/control-plane/reads.js';
import { credentialOf } from '../session-credential.js';

/** The signed-in user of a console-session route, or 401. */
export const requireSession = async (
  request: FastifyRequest,
  reads: ControlPlaneReads,
  now: Date,
): Promise<SessionPrincipal> => {
  const token = credentialOf(request);
  if (!token)
    throw new ServiceError(
      'unauthenticated',
      'missing console session: send Authorization: Bearer <session token>',
    );
  const principal = await reads.sessionPrincipal(token, now);
  if (!principal) throw new ServiceError('unauthenticated', 'invalid or expired session token');
  return principal;
};
