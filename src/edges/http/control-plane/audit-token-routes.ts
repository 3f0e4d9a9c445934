import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ControlPlaneCommands } from '../../../commands/control-plane/commands.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';
import { actorOf, type Principal, requireWorkspace } from './auth.js';

const createBody = z.strictObject({ workspace_id: z.string(), name: z.string() });

/**
 * Audit read tokens (SPEC 5: bearer token with scope audit:read for the audit read facade): the
 * platform administrator or a manager of the token's workspace mints, lists and revokes them; a
 * member who is not a manager is refused, as for every other credential of a workspace. The secret
 * is answered once, by POST; no listing carries it or its hash.
 */
export const registerAuditTokenRoutes = (
  app: FastifyInstance,
  cp: ControlPlaneCommands,
  reads: ControlPlaneReads,
  who: (request: FastifyRequest) => Principal,
): void => {
  /** A workspace the caller manages, or 404 (unknown, naming workspace_id) or 403. */
  const managedWorkspace = async (p: Principal, workspaceId: string) => {
    if (!(await reads.workspace(workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
    requireWorkspace(p, workspaceId, 'manager');
    return workspaceId;
  };

  app.post('/api/audit-tokens', routeDoc({ body: createBody }), async (request, reply) => {
    const p = who(request);
    const body = parseBody(createBody, request.body);
    const workspaceId = await managedWorkspace(p, body.workspace_id);
    return reply.code(201).send(await cp.createAuditToken(actorOf(p), workspaceId, body.name));
  });

  app.get('/api/audit-tokens', async (request) => {
    const p = who(request);
    const workspaceId = (request.query as Record<string, string | undefined>).workspace_id;
    if (workspaceId !== undefined) {
      await managedWorkspace(p, workspaceId);
      return { data: await reads.auditTokens({ workspaceIds: [workspaceId] }) };
    }
    // Without a workspace: the administrator sees every token, a user those of the workspaces it manages.
    const managed =
      p.kind === 'admin'
        ? undefined
        : [...p.memberships].filter(([, role]) => role === 'manager').map(([id]) => id);
    return { data: await reads.auditTokens({ workspaceIds: managed }) };
  });

  app.delete('/api/audit-tokens/:audit_token_id', async (request) => {
    const p = who(request);
    const token = await reads.requireAuditToken((request.params as Record<string, string>).audit_token_id!);
    requireWorkspace(p, token.workspace_id, 'manager');
    await cp.revokeAuditToken(actorOf(p), token.id);
    return reads.auditToken(token.id);
  });
};
