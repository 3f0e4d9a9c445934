import type { SpendCapCommand, SpendCapEvent } from '../spend-cap/events.js';

export type ProjectEvent =
  | {
      type: 'ProjectCreated';
      data: { project_id: string; org_id: string; workspace_id: string; name: string };
    }
  | { type: 'ProjectTracingSet'; data: { enabled: boolean } }
  | SpendCapEvent;

export type ProjectCommand =
  | { type: 'CreateProject'; projectId: string; orgId: string; workspaceId: string; name: string }
  | { type: 'SetProjectTracing'; enabled: boolean }
  | SpendCapCommand;
