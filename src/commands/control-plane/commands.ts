import { apiKeyCommands } from '../api-key/service.js';
import { auditTokenCommands } from '../audit-token/service.js';
import type { LiveEndpoints, StoredCredentials } from '../connections/ports.js';
import { connectionCommands } from '../connections/service.js';
import { organizationCommands } from '../organization/service.js';
import { policyCommands } from '../policy/service.js';
import type {
  ApiKeyDirectory,
  AuditTokenDirectory,
  ConnectionDirectory,
  DimensionDirectory,
  OrganizationDirectory,
  ProjectDirectory,
  TraceIngestKeyDirectory,
  UserDirectory,
  WorkspaceDirectory,
} from '../ports.js';
import { projectCommands } from '../project/service.js';
import type { Actor, CommandDeps } from '../service.js';
import type { SpendCapChange } from '../spend-cap/decider.js';
import type { SpendCapLevel } from '../spend-cap/events.js';
import { traceIngestKeyCommands } from '../trace-ingest-key/service.js';
import { userCommands } from '../user/service.js';
import { workspaceCommands } from '../workspace/service.js';

export interface ControlPlaneDeps extends CommandDeps {
  masterKey: Buffer;
  workspaces: WorkspaceDirectory;
  /** The control-plane read model, answering each aggregate's tenancy lookups. */
  directory: OrganizationDirectory &
    ProjectDirectory &
    ApiKeyDirectory &
    ConnectionDirectory &
    TraceIngestKeyDirectory &
    AuditTokenDirectory &
    DimensionDirectory &
    UserDirectory &
    StoredCredentials;
  endpoints: LiveEndpoints;
  /** Read-your-writes on the policy read model, which its own projection keeps. */
  readYourPolicyWrites: (position: number) => Promise<void>;
  /** SVC_TENANT_PRIVATE_DESTINATIONS=allow: tenant connections may name internal hosts. */
  allowPrivateDestinations?: boolean;
}

/**
 * The control plane's commands as its edges call them (SPEC 4.6, 4.8): each aggregate's service,
 * side by side. Composition only: every command lives with its aggregate; a spend cap is set on
 * the organization, project or API key it limits, so the one entry picks that aggregate by level.
 */
export const controlPlaneCommands = (deps: ControlPlaneDeps) => {
  const workspaces = workspaceCommands(deps);
  const organizations = organizationCommands(deps);
  const projects = projectCommands(deps);
  const apiKeys = apiKeyCommands(deps);
  const capped = {
    org: organizations.setOrganizationSpendCap,
    project: projects.setProjectSpendCap,
    api_key: apiKeys.setApiKeySpendCap,
  } satisfies Record<SpendCapLevel, unknown>;
  return {
    ...workspaces,
    ...organizations,
    ...projects,
    ...apiKeys,
    ...userCommands({ ...deps, members: workspaces }),
    ...connectionCommands({ ...deps, credentials: deps.directory }),
    ...traceIngestKeyCommands(deps),
    ...auditTokenCommands(deps),
    ...policyCommands({ ...deps, readYourWrites: deps.readYourPolicyWrites }),
    setSpendCap: (actor: Actor, target: { level: SpendCapLevel; id: string }, change: SpendCapChange) =>
      capped[target.level](actor, target.id, change),
  };
};

export type ControlPlaneCommands = ReturnType<typeof controlPlaneCommands>;
