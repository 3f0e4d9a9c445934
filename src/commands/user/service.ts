import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId, newSecret } from '../../lib/ids.js';
import type { UserDirectory } from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, runCommand } from '../service.js';
import type { WorkspaceRole } from '../workspace/events.js';
import type { WorkspaceCommands } from '../workspace/service.js';
import { normalizeEmail, userDecider, userStream } from './decider.js';
import type { UserCommand } from './events.js';

/** Visible prefix of a console session token (SPEC 4.4 console session routes). */
export const SESSION_PREFIX = 'svc_sess_';

export interface UserDeps extends CommandDeps {
  directory: UserDirectory;
  /** Where a new user's workspace role is recorded: the workspace's own stream. */
  members: Pick<WorkspaceCommands, 'addMember'>;
}

/** Console users and their sessions (SPEC 4.4). */
export const userCommands = (deps: UserDeps) => {
  const run = (userId: string, command: UserCommand, actor: Actor, retries?: number) =>
    runCommand(deps, userDecider, userStream(userId), command, actor, null, { retries });

  return {
    /** Registers a user (idempotent per e-mail) and, with `membership`, gives it a workspace role. */
    async addUser(actor: Actor, email: unknown, membership?: { workspaceId: string; role: WorkspaceRole }) {
      if (typeof email !== 'string')
        throw new ServiceError('bad_request', 'email is required', { param: 'email' });
      const normalized = normalizeEmail(email);
      const userId = idFromNames('usr', normalized);
      await run(userId, { type: 'RegisterUser', userId, email: normalized }, actor);
      if (membership)
        await deps.members.addMember(actor, membership.workspaceId, {
          userId,
          email: normalized,
          role: membership.role,
        });
      return { user_id: userId, email: normalized };
    },

    /** Mints a session token for a registered user; only its hash enters the event. */
    async issueSession(actor: Actor, email: string, ttlMs: number) {
      const user = await deps.directory.userByEmail(normalizeEmail(email));
      if (!user)
        throw new ServiceError('not_found', `no user with e-mail ${normalizeEmail(email)}`, {
          param: 'email',
        });
      const token = newSecret(SESSION_PREFIX);
      const sessionId = newId('ses');
      const expiresAt = new Date(deps.clock().getTime() + ttlMs).toISOString();
      await run(
        user.user_id,
        { type: 'IssueSession', sessionId, tokenHash: hashSecret(token), expiresAt },
        actor,
      );
      return { session_id: sessionId, token, expires_at: expiresAt, user_id: user.user_id };
    },

    /**
     * Revokes one of a user's sessions; revoking it again records nothing. The decision reads only
     * the user's stream, so a concurrent sign-in of the same user is retried, not refused.
     */
    async revokeSession(actor: Actor, userId: string, sessionId: string) {
      const now = deps.clock().toISOString();
      await run(userId, { type: 'RevokeSession', sessionId, now }, actor, CONFLICT_RETRIES);
    },
  };
};

export type UserCommands = ReturnType<typeof userCommands>;
