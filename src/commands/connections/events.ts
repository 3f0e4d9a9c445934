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
