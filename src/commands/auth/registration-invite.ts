import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { RegistrationInviteCommand, RegistrationInviteEvent } from './events.js';

export interface RegistrationInvite {
  exists: boolean;
  email: string;
  expiresAt: string;
  acceptedBy: string | null;
}

export const registrationInviteStream = (inviteId: string) => `reginvite-${inviteId}`;

const expired = (expiresAt: string, now: string) => Date.parse(now) >= Date.parse(expiresAt);

export const registrationInviteDecider: Decider<
  RegistrationInviteCommand,
  RegistrationInviteEvent,
  RegistrationInvite
> = {
  initialState: () => ({ exists: false, email: '', expiresAt: '', acceptedBy: null }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateRegistrationInvite':
        if (s.exists) throw new ServiceError('conflict', 'invite already exists');
        return [
          {
            type: 'RegistrationInviteCreated',
            data: {
              invite_id: cmd.inviteId,
              token_hash: cmd.tokenHash,
              email: cmd.email,
              workspace_id: cmd.workspaceId,
              role: cmd.role,
              expires_at: cmd.expiresAt,
            },
          },
        ];
      case 'AcceptRegistrationInvite':
        if (!s.exists) throw new ServiceError('forbidden', 'the registration invite is not valid');
        // The same user accepting again is a retried sign-in that failed after the acceptance.
        if (s.acceptedBy === cmd.userId) return [];
        if (s.acceptedBy !== null)
          throw new ServiceError('forbidden', 'the registration invite was already used');
        if (expired(s.expiresAt, cmd.now))
          throw new ServiceError('forbidden', 'the registration invite has expired');
        if (s.email !== cmd.email)
          throw new ServiceError(
            'forbidden',
            'the registration invite was issued for another e-mail address',
          );
        return [{ type: 'RegistrationInviteAccepted', data: { user_id: cmd.userId, accepted_at: cmd.now } }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'RegistrationInviteCreated':
        return { exists: true, email: e.data.email, expiresAt: e.data.expires_at, acceptedBy: null };
      case 'RegistrationInviteAccepted':
        return { ...s, acceptedBy: e.data.user_id };
      default:
        return assertNever(e);
    }
  },
};
