/**
 * Provider credentials: tenant connections (BYOK per org/project) and operator platform keys.
 * Commands arrive already validated and with the secret already encrypted (ARCHITECTURE.md: secrets
 * never enter an event in clear text); the event holds ciphertext only.
 */
export interface ConnectionFields {
  /** The adapter: it fixes the credential's format (SPEC 2.6, 2.7). */
  provider: string;
  /**
   * The registry lane the credential serves (SPEC 4.7: a second lane has its own credentials).
   * Absent: every lane of the provider that has no credential of its own, which is what every
   * event written before lanes had credentials means (so those events need no upcast).
   */
  lane?: string;
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

/**
 * The associated data a platform key's ciphertext is bound to: `platform:<provider>` for the
 * provider-wide key (as before lanes had keys), `platform:<provider>:<lane>` for a lane's own.
 */
export const platformKeyAad = (provider: string, lane?: string | null): string =>
  lane ? `platform:${provider}:${lane}` : `platform:${provider}`;
