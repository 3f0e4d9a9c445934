import type { SpendCapCommand, SpendCapEvent } from '../spend-cap/events.js';

/**
 * A project-scoped service API key. The secret is never in an event: only its SHA-256 and the
 * visible prefix. Reporting-dimension assignments live here too (SPEC 2.10).
 */
export type ApiKeyEvent =
  | {
      type: 'ApiKeyCreated';
      data: {
        api_key_id: string;
        project_id: string;
        org_id: string;
        workspace_id: string;
        name: string;
        prefix: string;
        secret_hash: string;
      };
    }
  | { type: 'ApiKeyRevoked'; data: { revoked_at: string } }
  | { type: 'ApiKeyTracingSet'; data: { enabled: boolean } }
  | { type: 'DimensionAssigned'; data: { definition_id: string; value: string; effective_from: string } }
  | { type: 'DimensionAssignmentEnded'; data: { definition_id: string; effective_to: string } }
  | SpendCapEvent;

export type ApiKeyCommand =
  | {
      type: 'CreateApiKey';
      apiKeyId: string;
      projectId: string;
      orgId: string;
      workspaceId: string;
      name: string;
      prefix: string;
      secretHash: string;
    }
  | { type: 'RevokeApiKey'; now: string }
  | { type: 'SetApiKeyTracing'; enabled: boolean }
  | { type: 'AssignDimension'; definitionId: string; value: string; now: string; definitionActive: boolean }
  | { type: 'EndDimensionAssignment'; definitionId: string; endAt: string }
  | SpendCapCommand;
