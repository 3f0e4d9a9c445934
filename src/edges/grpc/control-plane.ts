import type * as grpc from '@grpc/grpc-js';
import type { ControlPlaneCommands } from '../../commands/control-plane/commands.js';
import { ServiceError } from '../../lib/errors.js';
import type {
  ApiKeyRow,
  ConnectionRow,
  ControlPlaneReads,
  OrgRow,
  ProjectRow,
} from '../../projections/control-plane/reads.js';
import type { ApiKey__Output } from './generated/svc/controlplane/v1/ApiKey.js';
import type { ApiKeyServiceHandlers } from './generated/svc/controlplane/v1/ApiKeyService.js';
import type { CreateApiKeyResponse__Output } from './generated/svc/controlplane/v1/CreateApiKeyResponse.js';
import type { DeleteProviderKeyResponse__Output } from './generated/svc/controlplane/v1/DeleteProviderKeyResponse.js';
import type { ListApiKeysResponse__Output } from './generated/svc/controlplane/v1/ListApiKeysResponse.js';
import type { ListOrgsResponse__Output } from './generated/svc/controlplane/v1/ListOrgsResponse.js';
import type { ListProjectsResponse__Output } from './generated/svc/controlplane/v1/ListProjectsResponse.js';
import type { ListProviderKeysResponse__Output } from './generated/svc/controlplane/v1/ListProviderKeysResponse.js';
import type { Organization__Output } from './generated/svc/controlplane/v1/Organization.js';
import type { OrgServiceHandlers } from './generated/svc/controlplane/v1/OrgService.js';
import type { Project__Output } from './generated/svc/controlplane/v1/Project.js';
import type { ProjectServiceHandlers } from './generated/svc/controlplane/v1/ProjectService.js';
import type { ProviderKey__Output } from './generated/svc/controlplane/v1/ProviderKey.js';
import type { ProviderKeyServiceHandlers } from './generated/svc/controlplane/v1/ProviderKeyService.js';
import { loadService } from './server.js';
import { unary } from './unary.js';

const FILE = 'svc/controlplane/v1/control_plane.proto';
const actor = { id: 'grpc:service' };

const org = (o: OrgRow): Organization__Output => ({
  org_id: o.org_id,
  workspace_id: o.workspace_id,
  name: o.name,
  provider_disallow: o.provider_disallow,
  tracing: o.tracing,
});
const project = (p: ProjectRow): Project__Output => ({
  project_id: p.project_id,
  org_id: p.org_id,
  workspace_id: p.workspace_id,
  name: p.name,
  tracing: p.tracing,
});
const apiKey = (k: ApiKeyRow): ApiKey__Output => ({
  api_key_id: k.api_key_id,
  project_id: k.project_id,
  org_id: k.org_id,
  workspace_id: k.workspace_id,
  name: k.name,
  prefix: k.prefix,
  revoked: k.revoked_at !== null,
});
const providerKey = (
  c: Pick<
    ConnectionRow,
    'id' | 'org_id' | 'project_id' | 'provider' | 'lane' | 'name' | 'base_url' | 'metadata'
  >,
): ProviderKey__Output => ({
  id: c.id,
  org_id: c.org_id,
  project_id: c.project_id ?? '',
  provider: c.provider,
  lane: c.lane ?? '',
  name: c.name,
  base_url: c.base_url ?? '',
  metadata_json: JSON.stringify(c.metadata),
});

const parseJsonObject = (text: string, field: string): unknown => {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ServiceError('bad_request', `${field} is not valid JSON`, { param: field });
  }
};

/** OrgService, ProjectService, ApiKeyService, ProviderKeyService (AuthService is the auth role's: auth.ts). */
export const addControlPlaneServices = (
  server: grpc.Server,
  cp: ControlPlaneCommands,
  r: ControlPlaneReads,
  serviceToken: string,
): void => {
  const u = <Req, Res>(h: (req: Req) => Promise<Res>) => unary<Req, Res>(serviceToken, h);
  server.addService(loadService(FILE, 'svc.controlplane.v1.OrgService'), {
    CreateOrg: u(async (req) =>
      org((await r.organization((await cp.createOrganization(actor, req.workspace_id, req.name)).org_id))!),
    ),
    GetOrg: u(async (req) => org(await r.requireOrganization(req.org_id))),
    ListOrgs: u(
      async (req): Promise<ListOrgsResponse__Output> => ({
        orgs: (await r.organizations(req.workspace_id ? [req.workspace_id] : undefined)).map(org),
      }),
    ),
  } satisfies OrgServiceHandlers);
  server.addService(loadService(FILE, 'svc.controlplane.v1.ProjectService'), {
    CreateProject: u(async (req) =>
      project((await r.project((await cp.createProject(actor, req.org_id, req.name)).project_id))!),
    ),
    GetProject: u(async (req) => project(await r.requireProject(req.project_id))),
    ListProjects: u(
      async (req): Promise<ListProjectsResponse__Output> => ({
        projects: (await r.projects({ orgId: req.org_id || undefined })).map(project),
      }),
    ),
  } satisfies ProjectServiceHandlers);
  server.addService(loadService(FILE, 'svc.controlplane.v1.ApiKeyService'), {
    CreateApiKey: u(async (req): Promise<CreateApiKeyResponse__Output> => {
      const created = await cp.createApiKey(actor, req.project_id, req.name);
      return { key: apiKey((await r.apiKey(created.api_key_id))!), secret: created.api_key };
    }),
    ListApiKeys: u(
      async (req): Promise<ListApiKeysResponse__Output> => ({
        keys: (await r.apiKeys({ projectId: req.project_id || undefined })).map(apiKey),
      }),
    ),
    RevokeApiKey: u(async (req) => {
      await cp.revokeApiKey(actor, req.api_key_id);
      return apiKey((await r.apiKey(req.api_key_id))!);
    }),
  } satisfies ApiKeyServiceHandlers);
  server.addService(loadService(FILE, 'svc.controlplane.v1.ProviderKeyService'), {
    CreateProviderKey: u(async (req) =>
      providerKey(
        await cp.createConnection(actor, {
          projectId: req.project_id,
          provider: req.provider,
          name: req.name,
          secret: req.secret,
          metadata: parseJsonObject(req.metadata_json ?? '', 'metadata_json'),
          baseUrl: req.base_url || null,
          lane: req.lane || null,
        }),
      ),
    ),
    ListProviderKeys: u(
      async (req): Promise<ListProviderKeysResponse__Output> => ({
        keys: (await r.connections({ projectId: req.project_id || undefined })).map(providerKey),
      }),
    ),
    DeleteProviderKey: u(async (req): Promise<DeleteProviderKeyResponse__Output> => {
      await cp.deleteConnection(actor, req.id);
      return {};
    }),
  } satisfies ProviderKeyServiceHandlers);
};
