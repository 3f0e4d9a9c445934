import type { ApiKeyEvent } from '../../commands/api-key/events.js';
import type { AuditTokenEvent } from '../../commands/audit-token/events.js';
import type { ConnectionEvent } from '../../commands/connections/events.js';
import type { OrganizationEvent } from '../../commands/organization/events.js';
import type { ProjectEvent } from '../../commands/project/events.js';
import type { TraceIngestKeyEvent } from '../../commands/trace-ingest-key/events.js';
import type { UserEvent } from '../../commands/user/events.js';
import type { WorkspaceEvent } from '../../commands/workspace/events.js';
import type { StoredEvent } from '../../events/event-store.js';
import type { PoolClient } from '../../events/postgres/pool.js';
import { clearReadModel, type Projection } from '../projection.js';

type ControlPlaneEvent =
  | WorkspaceEvent
  | OrganizationEvent
  | ProjectEvent
  | UserEvent
  | ApiKeyEvent
  | ConnectionEvent
  | TraceIngestKeyEvent
  | AuditTokenEvent;

const idOf = (streamId: string) => streamId.slice(streamId.indexOf('-') + 1);

const TABLES = [
  'rm_workspaces',
  'rm_users',
  'rm_workspace_members',
  'rm_sessions',
  'rm_orgs',
  'rm_projects',
  'rm_api_keys',
  'rm_dimension_definitions',
  'rm_dimension_assignments',
  'rm_connections',
  'rm_platform_keys',
  'rm_trace_ingest_keys',
  'rm_spend_caps',
  'rm_audit_tokens',
];

const applyOne = async (c: PoolClient, stored: StoredEvent): Promise<void> => {
  const e = { type: stored.type, data: stored.data } as ControlPlaneEvent;
  const id = idOf(stored.streamId);
  const at = stored.metadata.now ?? stored.recordedAt.toISOString();
  switch (e.type) {
    case 'WorkspaceCreated':
      await c.query('INSERT INTO rm_workspaces (workspace_id, name, created_at) VALUES ($1, $2, $3)', [
        e.data.workspace_id,
        e.data.name,
        at,
      ]);
      return;
    case 'MemberAdded':
      await c.query(
        `INSERT INTO rm_workspace_members (workspace_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
        [id, e.data.user_id, e.data.role],
      );
      return;
    case 'MemberRemoved':
      await c.query('DELETE FROM rm_workspace_members WHERE workspace_id = $1 AND user_id = $2', [
        id,
        e.data.user_id,
      ]);
      return;
    case 'DimensionDefined':
      await c.query(
        'INSERT INTO rm_dimension_definitions (definition_id, workspace_id, key, description, created_at) VALUES ($1, $2, $3, $4, $5)',
        [e.data.definition_id, id, e.data.key, e.data.description, at],
      );
      return;
    case 'DimensionArchived':
      await c.query('UPDATE rm_dimension_definitions SET archived_at = $2 WHERE definition_id = $1', [
        e.data.definition_id,
        e.data.archived_at,
      ]);
      return;
    case 'OrganizationCreated':
      await c.query('INSERT INTO rm_orgs (org_id, workspace_id, name, created_at) VALUES ($1, $2, $3, $4)', [
        e.data.org_id,
        e.data.workspace_id,
        e.data.name,
        at,
      ]);
      return;
    case 'ProviderDisallowListSet':
      await c.query('UPDATE rm_orgs SET provider_disallow = $2 WHERE org_id = $1', [id, e.data.providers]);
      return;
    case 'OrganizationTracingSet':
      await c.query('UPDATE rm_orgs SET tracing = $2 WHERE org_id = $1', [id, e.data.enabled]);
      return;
    case 'ProjectCreated':
      await c.query(
        'INSERT INTO rm_projects (project_id, org_id, workspace_id, name, created_at) VALUES ($1, $2, $3, $4, $5)',
        [e.data.project_id, e.data.org_id, e.data.workspace_id, e.data.name, at],
      );
      return;
    case 'ProjectTracingSet':
      await c.query('UPDATE rm_projects SET tracing = $2 WHERE project_id = $1', [id, e.data.enabled]);
      return;
    case 'UserRegistered':
      await c.query('INSERT INTO rm_users (user_id, email, created_at) VALUES ($1, $2, $3)', [
        e.data.user_id,
        e.data.email,
        at,
      ]);
      return;
    case 'SessionIssued':
      await c.query(
        'INSERT INTO rm_sessions (session_id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)',
        [e.data.session_id, id, e.data.token_hash, e.data.expires_at],
      );
      return;
    case 'SessionRevoked':
      await c.query('UPDATE rm_sessions SET revoked_at = $2 WHERE session_id = $1', [
        e.data.session_id,
        e.data.revoked_at,
      ]);
      return;
    case 'ApiKeyCreated':
      await c.query(
        `INSERT INTO rm_api_keys (api_key_id, project_id, org_id, workspace_id, name, prefix, secret_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          e.data.api_key_id,
          e.data.project_id,
          e.data.org_id,
          e.data.workspace_id,
          e.data.name,
          e.data.prefix,
          e.data.secret_hash,
          at,
        ],
      );
      return;
    case 'ApiKeyRevoked':
      await c.query('UPDATE rm_api_keys SET revoked_at = $2 WHERE api_key_id = $1', [id, e.data.revoked_at]);
      return;
    case 'ApiKeyTracingSet':
      await c.query('UPDATE rm_api_keys SET tracing = $2 WHERE api_key_id = $1', [id, e.data.enabled]);
      return;
    case 'DimensionAssigned':
      // A second assignment in the same instant replaces the first, whose interval [t, t) is empty:
      // one row per start, so the projection never stops on two events with one effective_from.
      await c.query(
        `INSERT INTO rm_dimension_assignments (api_key_id, definition_id, value, effective_from)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (api_key_id, definition_id, effective_from)
         DO UPDATE SET value = EXCLUDED.value, effective_to = NULL`,
        [id, e.data.definition_id, e.data.value, e.data.effective_from],
      );
      return;
    case 'DimensionAssignmentEnded':
      await c.query(
        `UPDATE rm_dimension_assignments SET effective_to = $3
         WHERE api_key_id = $1 AND definition_id = $2 AND effective_to IS NULL`,
        [id, e.data.definition_id, e.data.effective_to],
      );
      return;
    case 'SpendCapSet':
      await c.query(
        `INSERT INTO rm_spend_caps (level, target_id, org_id, workspace_id, monthly_usd, updated_at, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (level, target_id) DO UPDATE SET monthly_usd = EXCLUDED.monthly_usd,
           updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
        [
          e.data.level,
          id,
          e.data.org_id,
          e.data.workspace_id,
          e.data.monthly_usd,
          at,
          stored.metadata.actor ?? null,
        ],
      );
      return;
    case 'SpendCapCleared':
      await c.query('DELETE FROM rm_spend_caps WHERE level = $1 AND target_id = $2', [e.data.level, id]);
      return;
    case 'ConnectionCreated':
      await c.query(
        `INSERT INTO rm_connections (connection_id, workspace_id, org_id, project_id, provider, name, base_url, metadata,
                                     secret_ciphertext, created_at, lane)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         -- A connection's id comes from its scope and name, so one deleted and created again is the
         -- same row come back (a plain insert stopped the projection for every tenant).
         ON CONFLICT (connection_id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id,
           org_id = EXCLUDED.org_id, project_id = EXCLUDED.project_id, provider = EXCLUDED.provider,
           name = EXCLUDED.name, base_url = EXCLUDED.base_url, metadata = EXCLUDED.metadata,
           secret_ciphertext = EXCLUDED.secret_ciphertext, created_at = EXCLUDED.created_at,
           lane = EXCLUDED.lane, deleted_at = NULL`,
        [
          e.data.connection_id,
          e.data.workspace_id,
          e.data.org_id,
          e.data.project_id,
          e.data.provider,
          e.data.name,
          e.data.base_url,
          JSON.stringify(e.data.metadata),
          e.data.secret_ciphertext,
          at,
          // Events from before lanes had credentials carry none: every lane of the provider.
          e.data.lane ?? null,
        ],
      );
      return;
    case 'ConnectionMetadataUpdated':
      await c.query('UPDATE rm_connections SET metadata = $2 WHERE connection_id = $1', [
        id,
        JSON.stringify(e.data.metadata),
      ]);
      return;
    case 'ConnectionDeleted':
      await c.query('UPDATE rm_connections SET deleted_at = $2 WHERE connection_id = $1', [
        id,
        e.data.deleted_at,
      ]);
      return;
    case 'PlatformKeySet':
      await c.query(
        `INSERT INTO rm_platform_keys (provider, lane, name, base_url, metadata, secret_ciphertext, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (provider, lane) DO UPDATE SET name = EXCLUDED.name, base_url = EXCLUDED.base_url,
           metadata = EXCLUDED.metadata, secret_ciphertext = EXCLUDED.secret_ciphertext, updated_at = EXCLUDED.updated_at`,
        [
          e.data.provider,
          // '' is the provider-wide key, which every event from before lanes had keys sets.
          e.data.lane ?? '',
          e.data.name,
          e.data.base_url,
          JSON.stringify(e.data.metadata),
          e.data.secret_ciphertext,
          at,
        ],
      );
      return;
    case 'TraceIngestKeyCreated':
      await c.query(
        `INSERT INTO rm_trace_ingest_keys (trace_ingest_key_id, project_id, org_id, workspace_id, name, prefix, secret_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          e.data.trace_ingest_key_id,
          e.data.project_id,
          e.data.org_id,
          e.data.workspace_id,
          e.data.name,
          e.data.prefix,
          e.data.secret_hash,
          at,
        ],
      );
      return;
    case 'TraceIngestKeyRotated':
      await c.query(
        'UPDATE rm_trace_ingest_keys SET prefix = $2, secret_hash = $3, rotated_at = $4 WHERE trace_ingest_key_id = $1',
        [id, e.data.prefix, e.data.secret_hash, e.data.rotated_at],
      );
      return;
    case 'TraceIngestKeyRevoked':
      await c.query('UPDATE rm_trace_ingest_keys SET revoked_at = $2 WHERE trace_ingest_key_id = $1', [
        id,
        e.data.revoked_at,
      ]);
      return;
    case 'TraceIngestKeyTracingSet':
      await c.query('UPDATE rm_trace_ingest_keys SET tracing = $2 WHERE trace_ingest_key_id = $1', [
        id,
        e.data.enabled,
      ]);
      return;
    case 'AuditTokenCreated':
      await c.query(
        `INSERT INTO rm_audit_tokens (audit_token_id, workspace_id, name, prefix, secret_hash, scopes, created_at, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          e.data.audit_token_id,
          e.data.workspace_id,
          e.data.name,
          e.data.prefix,
          e.data.secret_hash,
          e.data.scopes,
          at,
          stored.metadata.actor ?? null,
        ],
      );
      return;
    case 'AuditTokenRevoked':
      await c.query('UPDATE rm_audit_tokens SET revoked_at = $2 WHERE audit_token_id = $1', [
        id,
        e.data.revoked_at,
      ]);
      return;
    default: {
      const unknown: never = e;
      throw new Error(`control_plane projection: unhandled event ${(unknown as { type: string }).type}`);
    }
  }
};

export const CONTROL_PLANE_CATEGORIES = [
  'workspace',
  'org',
  'project',
  'user',
  'apikey',
  'connection',
  'platformkey',
  'tracekey',
  'audittoken',
] as const;

export const controlPlaneProjection: Projection = {
  name: 'control_plane',
  version: 1,
  categories: CONTROL_PLANE_CATEGORIES,
  reset: async (client) => {
    await clearReadModel(client, TABLES);
  },
  apply: async (client, events) => {
    for (const e of events) await applyOne(client, e);
  },
};
