import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lib/errors.js';
import { altDialect } from './alt-dialect.js';

// SPEC 7.2: types and statuses of the alternate envelope.
describe('alternate dialect error statuses', () => {
  it.each([
    ['invalid_request_error', 400],
    ['unauthenticated', 401],
    ['forbidden', 403],
    ['insufficient_funds', 403],
    ['not_found', 404],
    ['rate_limit_error', 429],
    ['upstream_error', 500],
    ['internal_error', 500],
    ['service_unavailable', 529],
  ] as const)('%s -> %i', (code, status) => {
    const err = new ServiceError(code, 'x');
    expect(altDialect.status?.(err)).toBe(status);
  });
});
