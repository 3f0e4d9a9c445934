import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { RegistrationCodeCommand, RegistrationCodeEvent } from './events.js';

export interface RegistrationCode {
  exists: boolean;
  usesRemaining: number;
  expiresAt: string;
  redeemedBy: ReadonlySet<string>;
}

export const registrationCodeStream = (codeId: string) => `regcode-${codeId}`;

export const MAX_REGISTRATION_CODE_USES = 1_000_000;

export const registrationCodeDecider: Decider<
  RegistrationCodeCommand,
  RegistrationCodeEvent,
  RegistrationCode
> = {
  initialState: () => ({ exists: false, usesRemaining: 0, expiresAt: '', redeemedBy: new Set() }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateRegistrationCode':
        if (s.exists) throw new ServiceError('conflict', 'registration code already exists');
        if (!Number.isInteger(cmd.uses) || cmd.uses < 1 || cmd.uses > MAX_REGISTRATION_CODE_USES)
          throw new ServiceError(
            'bad_request',
            `uses must be an integer from 1 to ${MAX_REGISTRATION_CODE_USES}`,
            {
              param: 'uses',
            },
          );
        return [
          {
            type: 'RegistrationCodeCreated',
            data: { code_id: cmd.codeId, code_hash: cmd.codeHash, uses: cmd.uses, expires_at: cmd.expiresAt },
          },
        ];
      case 'RedeemRegistrationCode':
        if (!s.exists) throw new ServiceError('forbidden', 'the registration code is not valid');
        // A user redeeming again is a retried sign-in: it costs no second use.
        if (s.redeemedBy.has(cmd.userId)) return [];
        if (Date.parse(cmd.now) >= Date.parse(s.expiresAt))
          throw new ServiceError('forbidden', 'the registration code has expired');
        if (s.usesRemaining <= 0)
          throw new ServiceError('forbidden', 'the registration code has no uses left');
        return [
          {
            type: 'RegistrationCodeRedeemed',
            data: { user_id: cmd.userId, redeemed_at: cmd.now, uses_remaining: s.usesRemaining - 1 },
          },
        ];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'RegistrationCodeCreated':
        return {
          exists: true,
          usesRemaining: e.data.uses,
          expiresAt: e.data.expires_at,
          redeemedBy: new Set(),
        };
      case 'RegistrationCodeRedeemed':
        return {
          ...s,
          usesRemaining: e.data.uses_remaining,
          redeemedBy: new Set([...s.redeemedBy, e.data.user_id]),
        };
      default:
        return assertNever(e);
    }
  },
};
