import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';
import { decideSpendCap, evolveSpendCap } from '../spend-cap/decider.js';
import type { ProjectCommand, ProjectEvent } from './events.js';

export interface Project {
  exists: boolean;
  tracing: boolean;
  /** Monthly USD cap in force (canonical decimal), or null. */
  spendCap: string | null;
}

export const projectStream = (projectId: string) => `project-${projectId}`;

export const projectDecider: Decider<ProjectCommand, ProjectEvent, Project> = {
  initialState: () => ({ exists: false, tracing: false, spendCap: null }),
  decide: (cmd, s) => {
    switch (cmd.type) {
      case 'CreateProject':
        if (s.exists)
          throw new ServiceError('conflict', `project ${cmd.name} already exists in this organization`);
        return [
          {
            type: 'ProjectCreated',
            data: {
              project_id: cmd.projectId,
              org_id: cmd.orgId,
              workspace_id: cmd.workspaceId,
              name: cmd.name,
            },
          },
        ];
      case 'SetProjectTracing':
        if (!s.exists) throw new ServiceError('not_found', 'project not found');
        return cmd.enabled === s.tracing
          ? []
          : [{ type: 'ProjectTracingSet', data: { enabled: cmd.enabled } }];
      case 'SetSpendCap':
      case 'ClearSpendCap':
        if (!s.exists) throw new ServiceError('not_found', 'project not found');
        return decideSpendCap(cmd, s.spendCap);
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'ProjectCreated':
        return { ...s, exists: true };
      case 'ProjectTracingSet':
        return { ...s, tracing: e.data.enabled };
      case 'SpendCapSet':
      case 'SpendCapCleared':
        return { ...s, spendCap: evolveSpendCap(s.spendCap, e) };
      default:
        return assertNever(e);
    }
  },
};
