/**
 * Monthly USD spend caps (SPEC 8 "monthly spend caps"; the refusal is SPEC 7.6). A cap belongs to
 * the organization, project or API key it limits, so its events live in that aggregate's stream
 * (`org-…`, `project-…`, `apikey-…`) and join that aggregate's event union.
 */

export type SpendCapLevel = 'org' | 'project' | 'api_key';

export type SpendCapEvent =
  | {
      type: 'SpendCapSet';
      data: { level: SpendCapLevel; org_id: string; workspace_id: string; monthly_usd: string };
    }
  | { type: 'SpendCapCleared'; data: { level: SpendCapLevel } };

export type SpendCapCommand =
  | { type: 'SetSpendCap'; level: SpendCapLevel; orgId: string; workspaceId: string; monthlyUsd: string }
  | { type: 'ClearSpendCap'; level: SpendCapLevel };
