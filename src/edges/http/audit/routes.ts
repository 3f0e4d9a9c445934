import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { PublishedKeys } from '../../../audit/model.js';
import { bearerToken } from '../../../lib/bearer.js';
import { safeEqual } from '../../../lib/crypto.js';
import { ServiceError } from '../../../lib/errors.js';
import { isOrgId } from '../../../objects/port.js';
import type { AuditReads } from '../../../projections/audit/reads.js';
import { authenticatedApiFamily, publicApiFamily } from '../api-family.js';

/** The scope an audit read token must carry (SPEC 5: audit read facade). */
export const AUDIT_READ_SCOPE = 'audit:read';

export interface AuditTokenIdentity {
  audit_token_id: string;
  workspace_id: string;
  scopes: string[];
}

export interface AuditRouteDeps {
  reads: AuditReads;
  /** A live audit token's workspace and scopes, else null. */
  verifyToken(secret: string): Promise<AuditTokenIdentity | null>;
  keys(): Promise<PublishedKeys>;
  rotateKey(): Promise<{ retired: string | null; active: string }>;
  adminToken: string;
}

/** Whose log a caller reads: the workspace its token is bound to, or for the operator any tenant. */
interface AuditCaller {
  tenantId: string;
}

const BODY_LIMIT = 1024;

const natural = (value: unknown, name: string, min = 0): number | undefined => {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value) || Number(value) < min)
    throw new ServiceError(
      'bad_request',
      `${name} must be a whole number${min > 0 ? ` of at least ${min}` : ''}`,
      {
        param: name,
      },
    );
  return Number(value);
};

const query = (request: FastifyRequest) => (request.query ?? {}) as Record<string, unknown>;
const param = (request: FastifyRequest, name: string) => (request.params as Record<string, string>)[name]!;

/**
 * The audit read facade (SPEC 5; ARCHITECTURE.md: on the gateway hostname under /api/audit): an
 * audit token carrying `audit:read` reads the log, batches, archives and proofs of the one
 * workspace it is bound to. The published keys are public. The operator (admin token) reads any
 * tenant with `tenant_id`, including `platform`, and rotates the signing key.
 */
export const registerAuditRoutes = async (app: FastifyInstance, deps: AuditRouteDeps): Promise<void> => {
  await app.register(async (scope) => {
    publicApiFamily(scope, { bodyLimit: BODY_LIMIT });
    scope.get('/api/audit/keys', async () => deps.keys());
    scope.post('/api/audit/keys/rotate', async (request, reply) => {
      const token = bearerToken(request.headers.authorization);
      if (!token || !safeEqual(token, deps.adminToken))
        throw new ServiceError('unauthenticated', 'rotating the audit signing key needs the admin token');
      reply.code(201);
      return deps.rotateKey();
    });
  });

  await app.register(async (scope) => {
    const family = authenticatedApiFamily<AuditCaller>(scope, {
      bodyLimit: BODY_LIMIT,
      authenticate: async (request) => {
        const token = bearerToken(request.headers.authorization);
        if (!token)
          throw new ServiceError(
            'unauthenticated',
            'the audit API needs an audit token as Authorization: Bearer',
          );
        if (safeEqual(token, deps.adminToken)) {
          const tenant = query(request).tenant_id;
          if (!isOrgId(tenant))
            throw new ServiceError('bad_request', 'the admin token reads one tenant: give tenant_id', {
              param: 'tenant_id',
            });
          return { tenantId: tenant };
        }
        const identity = await deps.verifyToken(token);
        if (!identity) throw new ServiceError('unauthenticated', 'not a valid audit token');
        if (!identity.scopes.includes(AUDIT_READ_SCOPE))
          throw new ServiceError('forbidden', `this token does not carry the ${AUDIT_READ_SCOPE} scope`);
        const asked = query(request).tenant_id;
        if (asked !== undefined && asked !== identity.workspace_id)
          throw new ServiceError(
            'bad_request',
            'an audit token reads its own workspace; tenant_id is for the operator',
            {
              param: 'tenant_id',
            },
          );
        return { tenantId: identity.workspace_id };
      },
    });
    const tenant = (request: FastifyRequest) => family.caller(request).tenantId;

    scope.get('/api/audit', async (request) => deps.reads.status(tenant(request)));
    scope.get('/api/audit/events', async (request) =>
      deps.reads.events(tenant(request), {
        after: natural(query(request).after, 'after'),
        limit: natural(query(request).limit, 'limit', 1),
      }),
    );
    scope.get('/api/audit/events/:event_id', async (request) =>
      deps.reads.event(tenant(request), param(request, 'event_id')),
    );
    scope.get('/api/audit/events/:event_id/proof', async (request) =>
      deps.reads.inclusionProof(
        tenant(request),
        param(request, 'event_id'),
        natural(query(request).tree_size, 'tree_size', 1),
      ),
    );
    scope.get('/api/audit/consistency', async (request) => {
      const from = natural(query(request).from, 'from', 1);
      const to = natural(query(request).to, 'to', 1);
      if (from === undefined || to === undefined)
        throw new ServiceError('bad_request', 'give from and to: the tree sizes of two signed heads');
      return deps.reads.consistencyProof(tenant(request), from, to);
    });
    scope.get('/api/audit/batches', async (request) =>
      deps.reads.batches(tenant(request), {
        after: natural(query(request).after, 'after'),
        limit: natural(query(request).limit, 'limit', 1),
      }),
    );
    // An empty path segment (`/api/audit/batches//archive`) is no batch number, not "not given".
    const batchNo = (request: FastifyRequest) =>
      natural(param(request, 'batch_no') || '-', 'batch_no', 1) as number;
    scope.get('/api/audit/batches/:batch_no', async (request) =>
      deps.reads.batch(tenant(request), batchNo(request)),
    );
    scope.get('/api/audit/batches/:batch_no/archive', async (request, reply) => {
      const bytes = await deps.reads.archive(tenant(request), batchNo(request));
      reply.type('application/gzip');
      return bytes;
    });
    scope.get('/api/audit/batches/:batch_no/manifest', async (request, reply) => {
      const bytes = await deps.reads.manifest(tenant(request), batchNo(request));
      reply.type('application/json');
      return bytes;
    });
  });
};
