import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { ConnectionCommand, ConnectionEvent } from './events.js';

export interface Connection {
  exists: boolean;
  deleted: boolean;
}

export const connectionStream = (connectionId: string) => `connection-${connectionId}`;
/** The provider-wide key's stream, as before lanes had keys; a lane's own key has its own stream. */
export const platformKeyStream = (provider: string, lane?: string) =>
  lane === undefined ? `platformkey-${provider}` : `platformkey-${provider}.${lane}`;

export const connectionDecider: Decider<ConnectionCommand, ConnectionEvent, Connection> = {
  initialState: () => ({ exists: false, deleted: false }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateConnection':
        if (s.exists && !s.deleted)
          throw new ServiceError(
            'conflict',
            `a connection named ${cmd.fields.name} already exists for this provider and scope`,
          );
        return [
          {
            type: 'ConnectionCreated',
            data: {
              ...cmd.fields,
              connection_id: cmd.connectionId,
              workspace_id: cmd.workspaceId,
              org_id: cmd.orgId,
              project_id: cmd.projectId,
            },
          },
        ];
      case 'SetPlatformKey':
        return [{ type: 'PlatformKeySet', data: cmd.fields }];
      case 'UpdateConnectionMetadata':
        if (!s.exists || s.deleted) throw new ServiceError('not_found', 'provider key not found');
        return [{ type: 'ConnectionMetadataUpdated', data: { metadata: cmd.metadata } }];
      case 'DeleteConnection':
        if (!s.exists || s.deleted) throw new ServiceError('not_found', 'provider key not found');
        return [{ type: 'ConnectionDeleted', data: { deleted_at: cmd.now } }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'ConnectionCreated':
      case 'PlatformKeySet':
        return { exists: true, deleted: false };
      case 'ConnectionMetadataUpdated':
        return s;
      case 'ConnectionDeleted':
        return { ...s, deleted: true };
      default:
        return assertNever(e);
    }
  },
};
