import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ControlPlaneCommands } from '../../../commands/control-plane/commands.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import { azureHttp } from '../../../providers/azure/client.js';
import { discoverDeployments } from '../../../providers/azure/discover.js';
import { authenticatedApiFamily } from '../api-family.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';
import { registerAuditTokenRoutes } from './audit-token-routes.js';
import {
  type AdminCredentials,
  actorOf,
  authenticate,
  type Principal,
  requireAdmin,
  requireWorkspace,
  visibleWorkspaces,
} from './auth.js';
import { registerPolicyRoutes } from './policy-routes.js';
import { registerSpendCapRoutes } from './spend-cap-routes.js';

const DIMENSION_GUIDANCE =
  'Reporting metadata is stored and exported in clear text: never put secrets, credentials or personal data in dimension keys or values.';

const name = z.string();
const strict = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape);
const enabledBody = strict({ enabled: z.boolean() });
const workspaceBody = strict({ name });
const memberBody = strict({ email: z.string(), role: z.enum(['manager', 'member']) });
const orgBody = strict({ workspace_id: z.string(), name });
const orgPatchBody = strict({ provider_disallow_list: z.array(z.string().min(1)) });
const projectBody = strict({ org_id: z.string(), name });
const keyBody = strict({ project_id: z.string(), name });
const dimensionBody = strict({ key: z.string(), description: z.string().optional() });
const dimensionValueBody = strict({ definition_id: z.string(), value: z.string() });
const discoverBody = strict({ apply: z.boolean().optional() });
const connectionBody = strict({
  org_id: z.string(),
  project_id: z.string(),
  provider: z.string(),
  // The registry lane the connection serves; absent or null: every lane of the provider.
  lane: z.string().nullable().optional(),
  name,
  secret: z.string(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  base_url: z.string().nullable().optional(),
});
const platformKeyBody = strict({
  // A lane's own key (SPEC 4.7); absent or null: the provider's key, for lanes without one.
  lane: z.string().nullable().optional(),
  secret: z.string(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  base_url: z.string().nullable().optional(),
});

type Params = Record<string, string>;

/**
 * Control-plane JSON bodies are a few names and ids; the largest is a provider connection whose
 * metadata maps deployments (SPEC 2.7), a few hundred of which fit in 64 KiB.
 */
export const CONTROL_PLANE_BODY_LIMIT = 64 * 1024;

/**
 * Control-plane HTTP routes of SPEC 4.6 plus CRUD for workspaces, orgs, projects and keys, and the
 * spend caps: one `/api` family whose caller (the platform administrator or a console session) is
 * authenticated before the body is read.
 */
export const registerControlPlaneRoutes = async (
  app: FastifyInstance,
  cp: ControlPlaneCommands,
  reads: ControlPlaneReads,
  adminToken: string | AdminCredentials,
): Promise<void> => {
  await app.register(async (scope) => {
    const family = authenticatedApiFamily(scope, {
      bodyLimit: CONTROL_PLANE_BODY_LIMIT,
      authenticate: (request) => authenticate(request, reads, adminToken, new Date()),
    });
    controlPlaneRoutes(scope, cp, reads, family.caller);
    registerSpendCapRoutes(scope, cp, reads, family.caller);
    registerPolicyRoutes(scope, cp, reads, family.caller);
    registerAuditTokenRoutes(scope, cp, reads, family.caller);
  });
};

const controlPlaneRoutes = (
  app: FastifyInstance,
  cp: ControlPlaneCommands,
  reads: ControlPlaneReads,
  who: (request: FastifyRequest) => Principal,
): void => {
  const params = (request: FastifyRequest) => request.params as Params;
  const query = (request: FastifyRequest) => request.query as Record<string, string | undefined>;

  // Workspaces and members.
  app.post('/api/workspaces', routeDoc({ body: workspaceBody }), async (request, reply) => {
    const p = who(request);
    requireAdmin(p);
    const body = parseBody(workspaceBody, request.body);
    const r = await cp.createWorkspace(actorOf(p), body.name);
    return reply.code(201).send({ workspace_id: r.workspace_id, name: body.name.trim() });
  });
  app.get('/api/workspaces', async (request) => ({
    data: await reads.workspaces(visibleWorkspaces(who(request))),
  }));
  app.get('/api/workspaces/:workspace_id', async (request) => {
    const p = who(request);
    const ws = await reads.workspace(params(request).workspace_id!);
    if (!ws) throw new ServiceError('not_found', 'workspace not found');
    requireWorkspace(p, ws.workspace_id, 'member');
    return ws;
  });
  app.get('/api/workspaces/:workspace_id/members', async (request) => {
    const p = who(request);
    const ws = await reads.workspace(params(request).workspace_id!);
    if (!ws) throw new ServiceError('not_found', 'workspace not found');
    requireWorkspace(p, ws.workspace_id, 'member');
    return { data: await reads.members(ws.workspace_id) };
  });
  app.post(
    '/api/workspaces/:workspace_id/members',
    routeDoc({ body: memberBody }),
    async (request, reply) => {
      const p = who(request);
      const ws = await reads.workspace(params(request).workspace_id!);
      if (!ws) throw new ServiceError('not_found', 'workspace not found');
      requireWorkspace(p, ws.workspace_id, 'manager');
      const body = parseBody(memberBody, request.body);
      const user = await cp.addUser(actorOf(p), body.email, {
        workspaceId: ws.workspace_id,
        role: body.role,
      });
      return reply.code(201).send({ ...user, workspace_id: ws.workspace_id, role: body.role });
    },
  );

  // Organizations.
  app.post('/api/orgs', routeDoc({ body: orgBody }), async (request, reply) => {
    const p = who(request);
    const body = parseBody(orgBody, request.body);
    if (!(await reads.workspace(body.workspace_id)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
    requireWorkspace(p, body.workspace_id, 'manager');
    const r = await cp.createOrganization(actorOf(p), body.workspace_id, body.name);
    return reply.code(201).send(await reads.organization(r.org_id));
  });
  app.get('/api/orgs', async (request) => ({
    data: await reads.organizations(visibleWorkspaces(who(request))),
  }));
  const orgFor = async (request: FastifyRequest, role: 'member' | 'manager') => {
    const p = who(request);
    const org = await reads.requireOrganization(params(request).org_id!);
    requireWorkspace(p, org.workspace_id, role);
    return { p, org };
  };
  app.get('/api/orgs/:org_id', async (request) => (await orgFor(request, 'member')).org);
  app.patch('/api/orgs/:org_id', routeDoc({ body: orgPatchBody }), async (request) => {
    const { p, org } = await orgFor(request, 'manager');
    const body = parseBody(orgPatchBody, request.body);
    await cp.setProviderDisallowList(actorOf(p), org.org_id, body.provider_disallow_list);
    return reads.organization(org.org_id);
  });
  app.patch('/api/orgs/:org_id/tracing', routeDoc({ body: enabledBody }), async (request) => {
    const { p, org } = await orgFor(request, 'manager');
    const body = parseBody(enabledBody, request.body);
    await cp.setOrganizationTracing(actorOf(p), org.org_id, body.enabled);
    return { org_id: org.org_id, tracing: body.enabled };
  });

  // Projects.
  app.post('/api/projects', routeDoc({ body: projectBody }), async (request, reply) => {
    const p = who(request);
    const body = parseBody(projectBody, request.body);
    const org = await reads.requireOrganization(body.org_id, 'org_id');
    requireWorkspace(p, org.workspace_id, 'manager');
    const r = await cp.createProject(actorOf(p), org.org_id, body.name);
    return reply.code(201).send(await reads.project(r.project_id));
  });
  app.get('/api/projects', async (request) => {
    const p = who(request);
    return {
      data: await reads.projects({ orgId: query(request).org_id, workspaceIds: visibleWorkspaces(p) }),
    };
  });
  const projectFor = async (
    request: FastifyRequest,
    role: 'member' | 'manager',
    id = params(request).project_id!,
  ) => {
    const p = who(request);
    const project = await reads.requireProject(id);
    requireWorkspace(p, project.workspace_id, role);
    return { p, project };
  };
  app.get('/api/projects/:project_id', async (request) => (await projectFor(request, 'member')).project);
  app.patch('/api/projects/:project_id/tracing', routeDoc({ body: enabledBody }), async (request) => {
    const { p, project } = await projectFor(request, 'manager');
    const body = parseBody(enabledBody, request.body);
    await cp.setProjectTracing(actorOf(p), project.project_id, body.enabled);
    return { project_id: project.project_id, tracing: body.enabled };
  });

  // Service API keys.
  app.post('/api/api-keys', routeDoc({ body: keyBody }), async (request, reply) => {
    const body = parseBody(keyBody, request.body);
    const { p } = await projectFor(request, 'manager', body.project_id);
    return reply.code(201).send(await cp.createApiKey(actorOf(p), body.project_id, body.name));
  });
  app.get('/api/api-keys', async (request) => {
    const p = who(request);
    return {
      data: await reads.apiKeys({ projectId: query(request).project_id, workspaceIds: visibleWorkspaces(p) }),
    };
  });
  const keyFor = async (request: FastifyRequest, role: 'member' | 'manager') => {
    const p = who(request);
    const key = await reads.requireApiKey(params(request).api_key_id!);
    requireWorkspace(p, key.workspace_id, role);
    return { p, key };
  };
  app.get('/api/api-keys/:api_key_id', async (request) => (await keyFor(request, 'member')).key);
  app.delete('/api/api-keys/:api_key_id', async (request) => {
    const { p, key } = await keyFor(request, 'manager');
    await cp.revokeApiKey(actorOf(p), key.api_key_id);
    return reads.apiKey(key.api_key_id);
  });
  app.patch('/api/api-keys/:api_key_id/tracing', routeDoc({ body: enabledBody }), async (request) => {
    const { p, key } = await keyFor(request, 'manager');
    const body = parseBody(enabledBody, request.body);
    await cp.setApiKeyTracing(actorOf(p), key.api_key_id, body.enabled);
    return { api_key_id: key.api_key_id, tracing: body.enabled };
  });

  // Reporting dimensions (SPEC 2.10).
  const workspaceFor = async (request: FastifyRequest, role: 'member' | 'manager') => {
    const p = who(request);
    const ws = await reads.workspace(params(request).workspace_id!);
    if (!ws) throw new ServiceError('not_found', 'workspace not found');
    requireWorkspace(p, ws.workspace_id, role);
    return { p, ws };
  };
  app.get('/api/workspaces/:workspace_id/reporting-dimensions', async (request) => {
    const { ws } = await workspaceFor(request, 'member');
    return {
      data: await reads.dimensions(ws.workspace_id, query(request).include_archived === 'true'),
      guidance: DIMENSION_GUIDANCE,
    };
  });
  app.post(
    '/api/workspaces/:workspace_id/reporting-dimensions',
    routeDoc({ body: dimensionBody }),
    async (request, reply) => {
      const { p, ws } = await workspaceFor(request, 'manager');
      const body = parseBody(dimensionBody, request.body);
      const created = await cp.defineDimension(actorOf(p), ws.workspace_id, body.key, body.description);
      return reply.code(201).send({ ...created, guidance: DIMENSION_GUIDANCE });
    },
  );
  app.delete('/api/workspaces/:workspace_id/reporting-dimensions/:definition_id', async (request) => {
    const { p, ws } = await workspaceFor(request, 'manager');
    const def = await reads.dimension(params(request).definition_id!);
    if (!def || def.workspace_id !== ws.workspace_id)
      throw new ServiceError('not_found', 'reporting dimension not found');
    await cp.archiveDimension(actorOf(p), ws.workspace_id, def.definition_id);
    return { ...(await reads.dimension(def.definition_id)), guidance: DIMENSION_GUIDANCE };
  });
  app.get('/api/api-keys/:api_key_id/reporting-dimensions', async (request) => {
    const { key } = await keyFor(request, 'member');
    const at = query(request).at;
    if (at !== undefined && Number.isNaN(Date.parse(at)))
      throw new ServiceError('bad_request', 'at must be an RFC 3339 timestamp', { param: 'at' });
    return {
      data: await reads.dimensionAssignments(key.api_key_id, at ?? new Date().toISOString()),
      guidance: DIMENSION_GUIDANCE,
    };
  });
  app.put(
    '/api/api-keys/:api_key_id/reporting-dimensions',
    routeDoc({ body: dimensionValueBody }),
    async (request) => {
      const { p, key } = await keyFor(request, 'manager');
      const body = parseBody(dimensionValueBody, request.body);
      await cp.assignDimension(actorOf(p), key.api_key_id, body.definition_id, body.value);
      return {
        data: await reads.dimensionAssignments(key.api_key_id, new Date().toISOString()),
        guidance: DIMENSION_GUIDANCE,
      };
    },
  );
  app.delete('/api/api-keys/:api_key_id/reporting-dimensions/:definition_id', async (request) => {
    const { p, key } = await keyFor(request, 'manager');
    await cp.endDimensionAssignment(
      actorOf(p),
      key.api_key_id,
      params(request).definition_id!,
      query(request).end_at,
    );
    return { data: await reads.dimensionAssignments(key.api_key_id), guidance: DIMENSION_GUIDANCE };
  });

  // Trace-ingest keys.
  app.post('/api/trace-ingest-keys', routeDoc({ body: keyBody }), async (request, reply) => {
    const body = parseBody(keyBody, request.body);
    const { p } = await projectFor(request, 'manager', body.project_id);
    return reply.code(201).send(await cp.createTraceIngestKey(actorOf(p), body.project_id, body.name));
  });
  app.get('/api/trace-ingest-keys', async (request) => {
    const p = who(request);
    return {
      data: await reads.traceIngestKeys({
        projectId: query(request).project_id,
        workspaceIds: visibleWorkspaces(p),
      }),
    };
  });
  const traceKeyFor = async (request: FastifyRequest) => {
    const p = who(request);
    const key = await reads.requireTraceIngestKey(params(request).trace_ingest_key_id!);
    requireWorkspace(p, key.workspace_id, 'manager');
    return { p, key };
  };
  app.post('/api/trace-ingest-keys/:trace_ingest_key_id/rotate', async (request) => {
    const { p, key } = await traceKeyFor(request);
    return cp.rotateTraceIngestKey(actorOf(p), key.id);
  });
  app.patch(
    '/api/trace-ingest-keys/:trace_ingest_key_id/tracing',
    routeDoc({ body: enabledBody }),
    async (request) => {
      const { p, key } = await traceKeyFor(request);
      const body = parseBody(enabledBody, request.body);
      await cp.setTraceIngestKeyTracing(actorOf(p), key.id, body.enabled);
      return { trace_ingest_key_id: key.id, tracing: body.enabled };
    },
  );
  app.delete('/api/trace-ingest-keys/:trace_ingest_key_id', async (request) => {
    const { p, key } = await traceKeyFor(request);
    await cp.revokeTraceIngestKey(actorOf(p), key.id);
    return reads.traceIngestKey(key.id);
  });

  // Provider connections (tenant BYOK) and platform keys.
  app.post('/api/provider-keys', routeDoc({ body: connectionBody }), async (request, reply) => {
    const body = parseBody(connectionBody, request.body);
    const { p, project } = await projectFor(request, 'manager', body.project_id);
    if (project.org_id !== body.org_id)
      throw new ServiceError('bad_request', 'project_id does not belong to org_id', { param: 'project_id' });
    const created = await cp.createConnection(actorOf(p), {
      projectId: body.project_id,
      provider: body.provider,
      name: body.name,
      secret: body.secret,
      metadata: body.metadata,
      baseUrl: body.base_url,
      lane: body.lane,
    });
    return reply.code(201).send(created);
  });
  app.get('/api/provider-keys', async (request) => {
    const p = who(request);
    const q = query(request);
    return {
      data: await reads.connections({
        projectId: q.project_id,
        orgId: q.org_id,
        workspaceIds: visibleWorkspaces(p),
      }),
    };
  });
  const connectionFor = async (request: FastifyRequest, role: 'member' | 'manager') => {
    const p = who(request);
    const conn = await reads.requireConnection(params(request).id!);
    requireWorkspace(p, conn.workspace_id, role);
    return { p, conn };
  };
  app.get('/api/provider-keys/:id', async (request) => (await connectionFor(request, 'member')).conn);
  app.delete('/api/provider-keys/:id', async (request, reply) => {
    const { p, conn } = await connectionFor(request, 'manager');
    await cp.deleteConnection(actorOf(p), conn.id);
    return reply.code(204).send();
  });
  // SPEC 4.6 deployment discovery: report-only unless apply is true.
  app.post('/api/provider-keys/:id/discover', routeDoc({ body: discoverBody }), async (request) => {
    const { p, conn } = await connectionFor(request, 'manager');
    const body = parseBody(discoverBody, request.body);
    return discoverDeployments(
      cp,
      actorOf(p),
      { connectionId: conn.id },
      { apply: body.apply === true, http: azureHttp() },
    );
  });
  app.put('/api/platform-keys/:provider', routeDoc({ body: platformKeyBody }), async (request) => {
    const p = who(request);
    requireAdmin(p);
    const body = parseBody(platformKeyBody, request.body);
    return cp.setPlatformKey(actorOf(p), {
      provider: params(request).provider,
      secret: body.secret,
      metadata: body.metadata,
      baseUrl: body.base_url,
      lane: body.lane,
    });
  });
  app.get('/api/platform-keys', async (request) => {
    requireAdmin(who(request));
    return { data: await reads.platformKeys() };
  });
};
