import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';
import { decideSpendCap, evolveSpendCap } from '../spend-cap/decider.js';
import type { OrganizationCommand, OrganizationEvent } from './events.js';

export interface Organization {
  exists: boolean;
  workspaceId: string;
  disallow: string[];
  tracing: boolean;
  /** Monthly USD cap in force (canonical decimal), or null. */
  spendCap: string | null;
}

export const organizationStream = (orgId: string) => `org-${orgId}`;

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

export const organizationDecider: Decider<OrganizationCommand, OrganizationEvent, Organization> = {
  initialState: () => ({ exists: false, workspaceId: '', disallow: [], tracing: false, spendCap: null }),
  decide: (cmd, s) => {
    if (cmd.type === 'CreateOrganization') {
      if (s.exists)
        throw new ServiceError('conflict', `organization ${cmd.name} already exists in this workspace`);
      return [
        {
          type: 'OrganizationCreated',
          data: { org_id: cmd.orgId, workspace_id: cmd.workspaceId, name: cmd.name },
        },
      ];
    }
    if (!s.exists) throw new ServiceError('not_found', 'organization not found');
    switch (cmd.type) {
      case 'SetProviderDisallowList': {
        const providers = [...new Set(cmd.providers)].sort();
        return sameList(providers, s.disallow)
          ? []
          : [{ type: 'ProviderDisallowListSet', data: { providers } }];
      }
      case 'SetOrganizationTracing':
        return cmd.enabled === s.tracing
          ? []
          : [{ type: 'OrganizationTracingSet', data: { enabled: cmd.enabled } }];
      case 'SetSpendCap':
      case 'ClearSpendCap':
        return decideSpendCap(cmd, s.spendCap);
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'OrganizationCreated':
        return { ...s, exists: true, workspaceId: e.data.workspace_id };
      case 'ProviderDisallowListSet':
        return { ...s, disallow: e.data.providers };
      case 'OrganizationTracingSet':
        return { ...s, tracing: e.data.enabled };
      case 'SpendCapSet':
      case 'SpendCapCleared':
        return { ...s, spendCap: evolveSpendCap(s.spendCap, e) };
      default:
        return assertNever(e);
    }
  },
};
