import type { FastifyRequest } from 'fastify';
import type { ApiKeyCache, ApiKeyIdentity } from '../../../gateway/auth/api-key-cache.js';
import { bearerToken } from '../../../lib/bearer.js';
import { ServiceError } from '../../../lib/errors.js';

/** Personal developer tokens (SPEC 2.11) carry this prefix; the model edges refuse them (SPEC 5). */
export const DEVELOPER_TOKEN_PREFIX = 'svc_dev_';

const bearer = (request: FastifyRequest): string | null => bearerToken(request.headers.authorization);

/**
 * Service API key of a model-edge request: a bearer token on /v1; on /alt also `x-api-key`.
 * Failures happen before a request id is assigned (SPEC 7.4).
 */
export const authenticateApiKey = (
  request: FastifyRequest,
  cache: ApiKeyCache,
  options: { allowXApiKey: boolean },
): ApiKeyIdentity => {
  const headerKey = options.allowXApiKey ? request.headers['x-api-key'] : undefined;
  const token = bearer(request) ?? (typeof headerKey === 'string' && headerKey.length > 0 ? headerKey : null);
  if (!token) {
    throw new ServiceError(
      'unauthenticated',
      options.allowXApiKey
        ? 'missing API key: send x-api-key or Authorization: Bearer'
        : 'missing API key: send Authorization: Bearer <key>',
    );
  }
  if (token.startsWith(DEVELOPER_TOKEN_PREFIX)) {
    throw new ServiceError(
      'unauthenticated',
      'personal developer tokens are not accepted on model routes; use a service API key',
    );
  }
  const identity = cache.verify(token);
  if (!identity) throw new ServiceError('unauthenticated', 'invalid or revoked API key');
  return identity;
};
