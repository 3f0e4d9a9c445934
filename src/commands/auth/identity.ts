import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { IdentityCommand, IdentityEvent } from './events.js';

export interface Identity {
  userId: string | null;
}

export const identityStream = (identityId: string) => `identity-${identityId}`;

export const identityDecider: Decider<IdentityCommand, IdentityEvent, Identity> = {
  initialState: () => ({ userId: null }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'LinkIdentity':
        if (s.userId === cmd.userId) return [];
        if (s.userId !== null)
          throw new ServiceError('conflict', 'this identity is already linked to another user');
        return [
          {
            type: 'IdentityLinked',
            data: {
              identity_id: cmd.identityId,
              provider: cmd.provider,
              issuer: cmd.issuer,
              subject: cmd.subject,
              user_id: cmd.userId,
            },
          },
        ];
      case 'RecordSignIn':
        // A sign-in is recorded only for the user the identity belongs to: anything else is a bug.
        if (s.userId !== cmd.userId)
          throw new Error('sign-in recorded for a user the identity is not linked to');
        return [
          {
            type: 'UserSignedIn',
            data: {
              user_id: cmd.userId,
              provider: cmd.provider,
              method: 'oidc',
              session_id: cmd.sessionId,
              registered: cmd.registered,
            },
          },
        ];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'IdentityLinked':
        return { userId: e.data.user_id };
      case 'UserSignedIn':
        return s;
      default:
        return assertNever(e);
    }
  },
};
