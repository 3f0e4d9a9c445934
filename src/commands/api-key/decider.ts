import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';
import { decideSpendCap, evolveSpendCap } from '../spend-cap/decider.js';
import type { ApiKeyCommand, ApiKeyEvent } from './events.js';

// The gateway's API key cache (src/gateway/auth/api-key-cache.ts) names the event type from here.
export type { ApiKeyEvent } from './events.js';

export interface ApiKey {
  exists: boolean;
  revoked: boolean;
  tracing: boolean;
  /** Open assignment per definition (value and start), if any. */
  assignments: Map<string, { value: string; from: string; to: string | null }>;
  /** Monthly USD cap in force (canonical decimal), or null. */
  spendCap: string | null;
}

export const apiKeyStream = (apiKeyId: string) => `apikey-${apiKeyId}`;

const MAX_VALUE = 256;

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKey> = {
  initialState: () => ({
    exists: false,
    revoked: false,
    tracing: false,
    assignments: new Map(),
    spendCap: null,
  }),
  decide: (cmd, s) => {
    if (cmd.type === 'CreateApiKey') {
      if (s.exists) throw new ServiceError('conflict', 'api key already exists');
      return [
        {
          type: 'ApiKeyCreated',
          data: {
            api_key_id: cmd.apiKeyId,
            project_id: cmd.projectId,
            org_id: cmd.orgId,
            workspace_id: cmd.workspaceId,
            name: cmd.name,
            prefix: cmd.prefix,
            secret_hash: cmd.secretHash,
          },
        },
      ];
    }
    if (!s.exists) throw new ServiceError('not_found', 'api key not found');
    switch (cmd.type) {
      case 'RevokeApiKey':
        if (s.revoked) throw new ServiceError('not_found', 'api key already revoked');
        return [{ type: 'ApiKeyRevoked', data: { revoked_at: cmd.now } }];
      case 'SetApiKeyTracing':
        return cmd.enabled === s.tracing
          ? []
          : [{ type: 'ApiKeyTracingSet', data: { enabled: cmd.enabled } }];
      case 'AssignDimension': {
        if (!cmd.definitionActive)
          throw new ServiceError('not_found', 'reporting dimension not found or archived', {
            param: 'definition_id',
          });
        if (cmd.value.length === 0 || cmd.value.length > MAX_VALUE) {
          throw new ServiceError('bad_request', `value must be 1 to ${MAX_VALUE} characters`, {
            param: 'value',
          });
        }
        const open = s.assignments.get(cmd.definitionId);
        if (open && open.to === null && open.value === cmd.value) return [];
        // Time never runs backwards on one key: a clock behind the last assignment's start (another
        // process) assigns from that start, so the intervals neither overlap nor invert. Two
        // assignments in one instant leave the first an empty interval [t, t).
        const from = open && open.from > cmd.now ? open.from : cmd.now;
        const events: ApiKeyEvent[] = [];
        if (open && (open.to === null || open.to > from)) {
          events.push({
            type: 'DimensionAssignmentEnded',
            data: { definition_id: cmd.definitionId, effective_to: from },
          });
        }
        events.push({
          type: 'DimensionAssigned',
          data: { definition_id: cmd.definitionId, value: cmd.value, effective_from: from },
        });
        return events;
      }
      case 'EndDimensionAssignment': {
        const open = s.assignments.get(cmd.definitionId);
        if (!open || open.to !== null)
          throw new ServiceError('not_found', 'no active assignment for this dimension');
        if (cmd.endAt < open.from)
          throw new ServiceError('bad_request', 'end date is before the assignment began', {
            param: 'end_at',
          });
        return [
          {
            type: 'DimensionAssignmentEnded',
            data: { definition_id: cmd.definitionId, effective_to: cmd.endAt },
          },
        ];
      }
      case 'SetSpendCap':
        // A revoked key serves nothing: a cap on it could never apply.
        if (s.revoked) throw new ServiceError('not_found', 'api key is revoked');
        return decideSpendCap(cmd, s.spendCap);
      case 'ClearSpendCap':
        return decideSpendCap(cmd, s.spendCap);
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'ApiKeyCreated':
        return { ...s, exists: true };
      case 'ApiKeyRevoked':
        return { ...s, revoked: true };
      case 'ApiKeyTracingSet':
        return { ...s, tracing: e.data.enabled };
      case 'DimensionAssigned':
        return {
          ...s,
          assignments: new Map(s.assignments).set(e.data.definition_id, {
            value: e.data.value,
            from: e.data.effective_from,
            to: null,
          }),
        };
      case 'DimensionAssignmentEnded': {
        const open = s.assignments.get(e.data.definition_id);
        if (!open) return s;
        return {
          ...s,
          assignments: new Map(s.assignments).set(e.data.definition_id, { ...open, to: e.data.effective_to }),
        };
      }
      case 'SpendCapSet':
      case 'SpendCapCleared':
        return { ...s, spendCap: evolveSpendCap(s.spendCap, e) };
      default:
        return assertNever(e);
    }
  },
};

/** The value of a dimension for a key at an instant: half-open [effective_from, effective_to). */
export const dimensionValueAt = (
  assignments: readonly { value: string; effective_from: string; effective_to: string | null }[],
  at: string,
): string | null => {
  const atMs = Date.parse(at);
  for (const a of assignments) {
    if (
      Date.parse(a.effective_from) <= atMs &&
      (a.effective_to === null || atMs < Date.parse(a.effective_to))
    )
      return a.value;
  }
  return null;
};
