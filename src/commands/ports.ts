/**
 * What the write side asks the read side (ARCHITECTURE.md "Storage and the flow of data": commands
 * decide and append, projections keep the read models). Each question is a narrow port defined
 * here by the commands that ask it, answered by a reader beside the projection that writes the
 * rows (src/projections/*), and wired by the composition roots (src/roles, src/cli).
 */

/** Does a workspace exist: asked once by a command that names a workspace it does not write. */
export interface WorkspaceDirectory {
  exists(workspaceId: string): Promise<boolean>;
}

/** The organization and workspace a write names: an organization's own, a project's or a key's. */
export interface Placement {
  org_id: string;
  workspace_id: string;
}

export interface OrganizationDirectory {
  organization(orgId: string): Promise<Placement | null>;
  /** A 404 `organization not found`, naming `param` when given. */
  requireOrganization(orgId: string, param?: string): Promise<Placement>;
}

export interface ProjectDirectory {
  project(projectId: string): Promise<Placement | null>;
  /** A 404 `project not found`, naming `param` when given. */
  requireProject(projectId: string, param?: string): Promise<Placement>;
}

export interface ApiKeyDirectory {
  /** A 404 `api key not found`. */
  requireApiKey(apiKeyId: string): Promise<Placement>;
}

/** The three scopes a limit is set on: a spend cap or a policy (SPEC 1.9, 8). */
export type OwnerScope = 'org' | 'project' | 'api_key';

/** Where an organization, project or API key belongs, or its 404. */
export const requireOwner = (
  directory: OrganizationDirectory & ProjectDirectory & ApiKeyDirectory,
  scope: OwnerScope,
  id: string,
): Promise<Placement> =>
  scope === 'org'
    ? directory.requireOrganization(id)
    : scope === 'project'
      ? directory.requireProject(id)
      : directory.requireApiKey(id);

export interface ConnectionDirectory {
  /** A live tenant connection, or a 404 `provider key not found`. */
  requireConnection(connectionId: string): Promise<{ workspace_id: string }>;
}

export interface TraceIngestKeyDirectory {
  /** A live trace-ingest key, or a 404 `trace ingest key not found`. */
  requireTraceIngestKey(id: string): Promise<{ workspace_id: string }>;
}

export interface AuditTokenDirectory {
  /** A live audit read token, or a 404 `audit token not found`. */
  requireAuditToken(id: string): Promise<{ workspace_id: string }>;
}

export interface DimensionDirectory {
  dimension(definitionId: string): Promise<{ workspace_id: string; archived_at: Date | null } | null>;
}

export interface UserDirectory {
  userByEmail(email: string): Promise<{ user_id: string; email: string } | null>;
}
