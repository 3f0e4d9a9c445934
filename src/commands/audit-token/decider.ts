import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';
import { AUDIT_READ_SCOPE, type AuditTokenCommand, type AuditTokenEvent } from './events.js';

export interface AuditToken {
  exists: boolean;
  revoked: boolean;
}

export const auditTokenStream = (id: string) => `audittoken-${id}`;

/** An audit read token (SPEC 5): minted for one workspace with scope audit:read, revoked once. */
export const auditTokenDecider: Decider<AuditTokenCommand, AuditTokenEvent, AuditToken> = {
  initialState: () => ({ exists: false, revoked: false }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateAuditToken':
        if (s.exists) throw new ServiceError('conflict', 'audit token already exists');
        return [
          {
            type: 'AuditTokenCreated',
            data: {
              audit_token_id: cmd.id,
              workspace_id: cmd.workspaceId,
              name: cmd.name,
              prefix: cmd.prefix,
              secret_hash: cmd.secretHash,
              scopes: [AUDIT_READ_SCOPE],
            },
          },
        ];
      case 'RevokeAuditToken':
        if (!s.exists || s.revoked) throw new ServiceError('not_found', 'audit token not found');
        return [{ type: 'AuditTokenRevoked', data: { revoked_at: cmd.now } }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'AuditTokenCreated':
        return { ...s, exists: true };
      case 'AuditTokenRevoked':
        return { ...s, revoked: true };
      default:
        return assertNever(e);
    }
  },
};
