import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { newId, newSecret } from '../../lib/ids.js';
import type { AuditTokenDirectory, WorkspaceDirectory } from '../ports.js';
import { type Actor, type CommandDeps, checkName, runCommand } from '../service.js';
import { auditTokenDecider, auditTokenStream } from './decider.js';
import { AUDIT_READ_SCOPE, AUDIT_TOKEN_PREFIX, type AuditTokenCommand } from './events.js';

/**
 * Characters of a minted token shown in listings: its prefix and five random ones, as an API key
 * shows (the shared 12 would leave two random characters behind this longer prefix).
 */
export const AUDIT_TOKEN_VISIBLE_LENGTH = AUDIT_TOKEN_PREFIX.length + 5;

export interface AuditTokenDeps extends CommandDeps {
  workspaces: WorkspaceDirectory;
  directory: AuditTokenDirectory;
}

/**
 * Audit read tokens of a workspace (SPEC 5): the secret is answered once, at creation; the audit
 * tenant of both changes is the workspace the token reads.
 */
export const auditTokenCommands = (deps: AuditTokenDeps) => {
  const run = (id: string, workspaceId: string, command: AuditTokenCommand, actor: Actor) =>
    runCommand(deps, auditTokenDecider, auditTokenStream(id), command, actor, workspaceId);

  return {
    async createAuditToken(actor: Actor, workspaceId: string, name: unknown) {
      const n = checkName(name);
      if (!(await deps.workspaces.exists(workspaceId)))
        throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
      const id = newId('aut');
      const secret = newSecret(AUDIT_TOKEN_PREFIX);
      const prefix = secret.slice(0, AUDIT_TOKEN_VISIBLE_LENGTH);
      await run(
        id,
        workspaceId,
        { type: 'CreateAuditToken', id, workspaceId, name: n, prefix, secretHash: hashSecret(secret) },
        actor,
      );
      return { id, secret, prefix, workspace_id: workspaceId, name: n, scopes: [AUDIT_READ_SCOPE] };
    },

    async revokeAuditToken(actor: Actor, id: string) {
      const token = await deps.directory.requireAuditToken(id);
      await run(id, token.workspace_id, { type: 'RevokeAuditToken', now: deps.clock().toISOString() }, actor);
    },
  };
};

export type AuditTokenCommands = ReturnType<typeof auditTokenCommands>;
