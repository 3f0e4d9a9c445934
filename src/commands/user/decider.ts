import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { UserCommand, UserEvent } from './events.js';

export interface User {
  exists: boolean;
  sessions: Map<string, { revoked: boolean }>;
}

export const userStream = (userId: string) => `user-${userId}`;
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export const userDecider: Decider<UserCommand, UserEvent, User> = {
  initialState: () => ({ exists: false, sessions: new Map() }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'RegisterUser':
        if (!EMAIL.test(cmd.email))
          throw new ServiceError('bad_request', 'email is not an e-mail address', { param: 'email' });
        return s.exists ? [] : [{ type: 'UserRegistered', data: { user_id: cmd.userId, email: cmd.email } }];
      case 'IssueSession':
        if (!s.exists) throw new ServiceError('not_found', 'user not found');
        return [
          {
            type: 'SessionIssued',
            data: { session_id: cmd.sessionId, token_hash: cmd.tokenHash, expires_at: cmd.expiresAt },
          },
        ];
      case 'RevokeSession': {
        const session = s.sessions.get(cmd.sessionId);
        if (!session) throw new ServiceError('not_found', 'session not found');
        // Idempotent (SPEC 4.8 AuthService.RevokeSession): a session is revoked, and audited, once.
        return session.revoked
          ? []
          : [{ type: 'SessionRevoked', data: { session_id: cmd.sessionId, revoked_at: cmd.now } }];
      }
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'UserRegistered':
        return { ...s, exists: true };
      case 'SessionIssued':
        return { ...s, sessions: new Map(s.sessions).set(e.data.session_id, { revoked: false }) };
      case 'SessionRevoked':
        return { ...s, sessions: new Map(s.sessions).set(e.data.session_id, { revoked: true }) };
      default:
        return assertNever(e);
    }
  },
};
