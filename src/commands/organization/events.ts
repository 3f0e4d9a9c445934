import type { SpendCapCommand, SpendCapEvent } from '../spend-cap/events.js';

export type OrganizationEvent =
  | { type: 'OrganizationCreated'; data: { org_id: string; workspace_id: string; name: string } }
  | { type: 'ProviderDisallowListSet'; data: { providers: string[] } }
  | { type: 'OrganizationTracingSet'; data: { enabled: boolean } }
  | SpendCapEvent;

export type OrganizationCommand =
  | { type: 'CreateOrganization'; orgId: string; workspaceId: string; name: string }
  | { type: 'SetProviderDisallowList'; providers: string[] }
  | { type: 'SetOrganizationTracing'; enabled: boolean }
  | SpendCapCommand;
