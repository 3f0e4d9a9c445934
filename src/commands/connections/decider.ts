import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

/**
 * Provider credentials: tenant connections (BYOK per org/project) and operator platform keys.
 * Commands arrive already validated and with the secret already encrypted (ARCHITECTURE.md: secrets
 * never enter an event in clear text); the event holds ciphertext only.
 */
export interface ConnectionFields {
  provider: string;
  name: string;
  base_url: string | null;
  metadata: Record<string, unknown>;
  secret_ciphertext: string;
}

export type ConnectionEvent =
  | {
      type: 'ConnectionCreated';
      data: ConnectionFields & {
        connection_id: string;
        workspace_id: string;
        org_id: string;
        project_id: string | null;
      };
    }
  | { type: 'ConnectionMetadataUpdated'; data: { metadata: Record<string, unknown> } }
  | { type: 'ConnectionDeleted'; data: { deleted_at: string } }
  | { type: 'PlatformKeySet'; data: ConnectionFields };

export type ConnectionCommand =
  | {
      type: 'CreateConnection';
      connectionId: string;
      workspaceId: string;
      orgId: string;
      projectId: string | null;
      fields: ConnectionFields;
    }
  | { type: 'UpdateConnectionMetadata'; metadata: Record<string, unknown> }
  | { type: 'DeleteConnection'; now: string }
  | { type: 'SetPlatformKey'; fields: ConnectionFields };

export interface Connection {
  exists: boolean;
  deleted: boolean;
}

export const connectionStream = (connectionId: string) => `connection-${connectionId}`;
export const platformKeyStream = (provider: string) => `platformkey-${provider}`;

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
