import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { newId, newSecret } from '../../lib/ids.js';
import type { OrganizationDirectory, ProjectDirectory } from '../ports.js';
import { VISIBLE_PREFIX_LENGTH } from '../service.js';
import { developerTokenDecider, developerTokenStream } from './developer-token.js';
import type { AuthLookups, SignedInUser } from './ports.js';
import { AUTH_SECRET_PREFIX, type AuthCommands } from './service.js';

const NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,99}$/u;

export interface CreateDeveloperTokenInput {
  org_id: string;
  project_id?: string | null | undefined;
  name: string;
}

/**
 * Personal developer tokens (SPEC 2.11, 4.4): a signed-in user mints them for an org of one of
 * their workspaces, optionally narrowed to one of its projects; the secret is answered once.
 */
export class DeveloperTokens {
  constructor(
    private readonly commands: AuthCommands,
    private readonly reads: AuthLookups,
    private readonly controlPlane: OrganizationDirectory & ProjectDirectory,
  ) {}

  /** Unknown orgs answer like foreign ones: a caller learns nothing about orgs outside their scope. */
  private async orgInScope(user: SignedInUser, orgId: string) {
    const org = await this.controlPlane.organization(orgId);
    if (!org || !user.memberships.has(org.workspace_id))
      throw new ServiceError('forbidden', 'org_id is not an organization of your workspaces', {
        param: 'org_id',
      });
    return org;
  }

  async create(user: SignedInUser, input: CreateDeveloperTokenInput) {
    const name = input.name.trim();
    if (!NAME.test(name))
      throw new ServiceError(
        'bad_request',
        'name must be 1 to 100 letters, digits, spaces, dots, dashes or underscores',
        { param: 'name' },
      );
    const org = await this.orgInScope(user, input.org_id);
    const projectId = input.project_id ?? null;
    if (projectId !== null) {
      const project = await this.controlPlane.project(projectId);
      if (!project || project.org_id !== org.org_id)
        throw new ServiceError('bad_request', 'project_id is not a project of org_id', {
          param: 'project_id',
        });
    }
    const tokenId = newId('dtk');
    const token = newSecret(AUTH_SECRET_PREFIX.developerToken);
    const prefix = token.slice(0, VISIBLE_PREFIX_LENGTH);
    const createdAt = this.commands.now().toISOString();
    await this.commands.execute(
      developerTokenDecider,
      developerTokenStream(tokenId),
      {
        type: 'CreateDeveloperToken',
        tokenId,
        userId: user.user_id,
        orgId: org.org_id,
        projectId,
        workspaceId: org.workspace_id,
        name,
        prefix,
        tokenHash: hashSecret(token),
      },
      { actor: `user:${user.user_id}`, tenantId: org.workspace_id },
    );
    return {
      id: tokenId,
      token,
      prefix,
      org_id: org.org_id,
      project_id: projectId,
      name,
      created_at: createdAt,
    };
  }

  async list(user: SignedInUser, orgId: string) {
    await this.orgInScope(user, orgId);
    const rows = await this.reads.developerTokens(user.user_id, orgId);
    return rows.map((r) => ({
      id: r.id,
      prefix: r.prefix,
      org_id: r.org_id,
      project_id: r.project_id,
      name: r.name,
      created_at: r.created_at.toISOString(),
    }));
  }

  async revoke(user: SignedInUser, tokenId: string) {
    const token = await this.reads.developerToken(tokenId);
    if (!token || token.user_id !== user.user_id || token.revoked_at)
      throw new ServiceError('not_found', 'developer token not found or already revoked');
    const revokedAt = this.commands.now().toISOString();
    await this.commands.execute(
      developerTokenDecider,
      developerTokenStream(tokenId),
      { type: 'RevokeDeveloperToken', userId: user.user_id, now: revokedAt },
      { actor: `user:${user.user_id}`, tenantId: token.workspace_id },
    );
    return { id: tokenId, revoked: true, revoked_at: revokedAt };
  }
}
