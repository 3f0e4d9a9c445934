import { ServiceError } from '../../lib/errors.js';
import type { Actor } from '../service.js';
import type { UserCommands } from '../user/service.js';
import type { AuthLookups, SessionPrincipals, SessionRow } from './ports.js';

/** A live session and what it carries: its user's workspace memberships. */
export interface VerifiedSession extends SessionRow {
  memberships: ReadonlyMap<string, string>;
}

/** A session as listed: its row, and whether it had expired when asked. */
export interface ListedSession extends SessionRow {
  expired: boolean;
}

/**
 * The console session operations of the auth service (SPEC 4.8 AuthService, SPEC 4.4 sessions):
 * verification asks the same rule every session-bearer route asks (sessionPrincipal); revocation
 * is the user aggregate's RevokeSession, whose event the audit relay records as session.revoked.
 */
export class Sessions {
  constructor(
    private readonly users: Pick<UserCommands, 'revokeSession'>,
    private readonly reads: Pick<AuthLookups, 'user' | 'session' | 'sessionByToken' | 'userSessions'>,
    private readonly principals: SessionPrincipals,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The session a bearer token names while it is live; null when unknown, revoked or expired. */
  async verify(token: string): Promise<VerifiedSession | null> {
    if (token === '') return null;
    const principal = await this.principals.sessionPrincipal(token, this.clock());
    if (!principal) return null;
    const session = await this.reads.sessionByToken(token);
    // Rows are never deleted: a principal without its row is a read model being rebuilt.
    if (!session) return null;
    return { ...session, memberships: principal.memberships };
  }

  private listed(row: SessionRow, now = this.clock()): ListedSession {
    return { ...row, expired: row.expires_at.getTime() <= now.getTime() };
  }

  /** Revokes a session by id, idempotently; answers it as it stands afterwards. */
  async revoke(actor: Actor, sessionId: string): Promise<ListedSession> {
    const session = await this.reads.session(sessionId);
    if (!session) throw new ServiceError('not_found', 'session not found', { param: 'session_id' });
    // The command waits for the read model (read-your-writes), so the row below shows the change.
    await this.users.revokeSession(actor, session.user_id, sessionId);
    const revoked = await this.reads.session(sessionId);
    if (!revoked) throw new Error(`session ${sessionId} left the read model while being revoked`);
    return this.listed(revoked);
  }

  async list(userId: string, options: { includeRevoked: boolean }): Promise<ListedSession[]> {
    if (!(await this.reads.user(userId)))
      throw new ServiceError('not_found', 'user not found', { param: 'user_id' });
    const now = this.clock();
    return (await this.reads.userSessions(userId, options)).map((row) => this.listed(row, now));
  }
}
