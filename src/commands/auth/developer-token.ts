import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { DeveloperTokenCommand, DeveloperTokenEvent } from './events.js';

export interface DeveloperToken {
  exists: boolean;
  userId: string;
  revoked: boolean;
}

export const developerTokenStream = (tokenId: string) => `devtoken-${tokenId}`;

export const developerTokenDecider: Decider<DeveloperTokenCommand, DeveloperTokenEvent, DeveloperToken> = {
  initialState: () => ({ exists: false, userId: '', revoked: false }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateDeveloperToken':
        if (s.exists) throw new ServiceError('conflict', 'developer token already exists');
        return [
          {
            type: 'DeveloperTokenCreated',
            data: {
              token_id: cmd.tokenId,
              user_id: cmd.userId,
              org_id: cmd.orgId,
              project_id: cmd.projectId,
              workspace_id: cmd.workspaceId,
              name: cmd.name,
              prefix: cmd.prefix,
              token_hash: cmd.tokenHash,
            },
          },
        ];
      case 'RevokeDeveloperToken':
        // Another user's token answers like an unknown one: its existence is not theirs to learn.
        if (!s.exists || s.revoked || s.userId !== cmd.userId)
          throw new ServiceError('not_found', 'developer token not found or already revoked');
        return [{ type: 'DeveloperTokenRevoked', data: { revoked_at: cmd.now } }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'DeveloperTokenCreated':
        return { exists: true, userId: e.data.user_id, revoked: false };
      case 'DeveloperTokenRevoked':
        return { ...s, revoked: true };
      default:
        return assertNever(e);
    }
  },
};
