import { isPlatformAdmin } from '../config/config.js';
import { bearerToken } from '../lib/bearer.js';
import { safeEqual } from '../lib/crypto.js';
import { ServiceError } from '../lib/errors.js';
import type { DeveloperTokenIdentity } from '../projections/auth/reads.js';
import type { ControlPlaneReads, OrgRow } from '../projections/control-plane/reads.js';

/**
 * Who may read what on the query routes (SPEC 5): a console session whose user is a member of the
 * org's workspace, a personal developer token bound to the org (and to its project, when it has
 * one), or the platform administrator. Service API keys are refused by prefix before any lookup,
 * so a gateway key never even costs a database read here.
 */

export const SERVICE_API_KEY_PREFIX = 'svc_sk_';
export const DEVELOPER_TOKEN_PREFIX = 'svc_dev_';

export type Caller =
  | { kind: 'admin'; userId?: string }
  | { kind: 'session'; userId: string; workspaces: ReadonlySet<string> }
  | { kind: 'developer'; userId: string; orgId: string; projectId: string | null };

/** The tenant a request reads: one org, optionally narrowed to one project. */
export interface OrgScope {
  org: OrgRow;
  orgId: string;
  workspaceId: string;
  projectId: string | null;
  caller: Caller;
}

export interface ScopeDeps {
  reads: ControlPlaneReads;
  verifyDeveloperToken: (token: string) => Promise<DeveloperTokenIdentity | null>;
  adminToken: string;
  /** SVC_PLATFORM_ADMINS: these users' console sessions read as the platform administrator. */
  platformAdmins?: ReadonlySet<string>;
  now?: () => Date;
}

export const identify = async (deps: ScopeDeps, authorization: string | undefined): Promise<Caller> => {
  const token = bearerToken(authorization);
  if (!token)
    throw new ServiceError(
      'unauthenticated',
      'missing bearer token: send a console session token or a personal developer token',
    );
  if (token.startsWith(SERVICE_API_KEY_PREFIX))
    throw new ServiceError(
      'unauthenticated',
      'service API keys are not accepted on query routes: use a console session or a personal developer token',
    );
  if (safeEqual(token, deps.adminToken)) return { kind: 'admin' };
  if (token.startsWith(DEVELOPER_TOKEN_PREFIX)) {
    const id = await deps.verifyDeveloperToken(token);
    if (!id) throw new ServiceError('unauthenticated', 'invalid or revoked developer token');
    return { kind: 'developer', userId: id.user_id, orgId: id.org_id, projectId: id.project_id };
  }
  const session = await deps.reads.sessionPrincipal(token, (deps.now ?? (() => new Date()))());
  if (!session) throw new ServiceError('unauthenticated', 'invalid or expired session token');
  if (deps.platformAdmins && isPlatformAdmin(deps.platformAdmins, session.email))
    return { kind: 'admin', userId: session.user_id };
  return { kind: 'session', userId: session.user_id, workspaces: new Set(session.memberships.keys()) };
};

// One answer for "no such org" and "not yours", so an org id cannot be probed for existence.
const outOfScope = () =>
  new ServiceError('forbidden', 'this organization is outside your scope', { param: 'org_id' });

export const canReadOrg = (caller: Caller, org: OrgRow): boolean =>
  caller.kind === 'admin' ||
  (caller.kind === 'session' && caller.workspaces.has(org.workspace_id)) ||
  (caller.kind === 'developer' && caller.orgId === org.org_id);

/** Resolves `org_id` (required) and `project_id` (optional) against the caller's grants. */
export const orgScope = async (
  deps: ScopeDeps,
  caller: Caller,
  orgId: string | undefined,
  projectId: string | undefined,
): Promise<OrgScope> => {
  if (!orgId) throw new ServiceError('bad_request', 'org_id is required', { param: 'org_id' });
  const org = await deps.reads.organization(orgId);
  if (!org || !canReadOrg(caller, org)) throw outOfScope();
  let project = projectId || null;
  if (caller.kind === 'developer' && caller.projectId) {
    if (project && project !== caller.projectId)
      throw new ServiceError('forbidden', 'this developer token is bound to another project', {
        param: 'project_id',
      });
    project = caller.projectId;
  }
  if (project) {
    const p = await deps.reads.project(project);
    if (!p || p.org_id !== org.org_id)
      throw new ServiceError('forbidden', 'this project is outside your scope', { param: 'project_id' });
  }
  return { org, orgId: org.org_id, workspaceId: org.workspace_id, projectId: project, caller };
};

/**
 * A workspace-wide read (the workspace report, a workspace export) covers the orgs of the
 * workspace the credential can see: all of them for a member or the administrator, the one bound
 * org (and project) for a developer token.
 */
export const workspaceScope = async (
  deps: ScopeDeps,
  caller: Caller,
  workspaceId: string | undefined,
): Promise<{ workspaceId: string; orgs: OrgRow[]; projectId: string | null }> => {
  if (!workspaceId)
    throw new ServiceError('bad_request', 'workspace_id is required', { param: 'workspace_id' });
  const forbidden = new ServiceError('forbidden', 'this workspace is outside your scope', {
    param: 'workspace_id',
  });
  if (caller.kind === 'session' && !caller.workspaces.has(workspaceId)) throw forbidden;
  const all = await deps.reads.organizations([workspaceId]);
  if (caller.kind === 'developer') {
    const orgs = all.filter((o) => o.org_id === caller.orgId);
    if (orgs.length === 0) throw forbidden;
    return { workspaceId, orgs, projectId: caller.projectId };
  }
  if (caller.kind === 'admin' && !(await deps.reads.workspace(workspaceId)))
    throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
  return { workspaceId, orgs: all, projectId: null };
};
