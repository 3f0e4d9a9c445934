import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';
import type { WorkspaceCommand, WorkspaceEvent, WorkspaceRole } from './events.js';

export interface Workspace {
  exists: boolean;
  name: string;
  members: Map<string, WorkspaceRole>;
  dimensions: Map<string, { key: string; archived: boolean }>;
}

export const workspaceStream = (workspaceId: string) => `workspace-${workspaceId}`;

const DIMENSION_KEY = /^[a-z][a-z0-9_]{0,62}$/;

const decide = (cmd: WorkspaceCommand, s: Workspace): WorkspaceEvent[] => {
  if (cmd.type === 'CreateWorkspace') {
    if (s.exists) throw new ServiceError('conflict', `workspace ${cmd.name} already exists`);
    return [{ type: 'WorkspaceCreated', data: { workspace_id: cmd.workspaceId, name: cmd.name } }];
  }
  if (!s.exists) throw new ServiceError('not_found', 'workspace not found');
  switch (cmd.type) {
    case 'AddMember':
      if (s.members.get(cmd.userId) === cmd.role) return [];
      return [{ type: 'MemberAdded', data: { user_id: cmd.userId, email: cmd.email, role: cmd.role } }];
    case 'RemoveMember':
      if (!s.members.has(cmd.userId)) throw new ServiceError('not_found', 'member not found');
      return [{ type: 'MemberRemoved', data: { user_id: cmd.userId } }];
    case 'DefineDimension': {
      if (!DIMENSION_KEY.test(cmd.key)) {
        throw new ServiceError(
          'bad_request',
          'key must be lower-case letters, digits and underscores, starting with a letter',
          { param: 'key' },
        );
      }
      const taken = [...s.dimensions.values()].some((d) => d.key === cmd.key && !d.archived);
      if (taken)
        throw new ServiceError('conflict', `dimension ${cmd.key} is already defined`, { param: 'key' });
      return [
        {
          type: 'DimensionDefined',
          data: { definition_id: cmd.definitionId, key: cmd.key, description: cmd.description },
        },
      ];
    }
    case 'ArchiveDimension': {
      const d = s.dimensions.get(cmd.definitionId);
      if (!d) throw new ServiceError('not_found', 'reporting dimension not found');
      if (d.archived) return [];
      return [{ type: 'DimensionArchived', data: { definition_id: cmd.definitionId, archived_at: cmd.now } }];
    }
    default:
      return assertNever(cmd);
  }
};

const evolve = (s: Workspace, e: WorkspaceEvent): Workspace => {
  switch (e.type) {
    case 'WorkspaceCreated':
      return { ...s, exists: true, name: e.data.name };
    case 'MemberAdded':
      return { ...s, members: new Map(s.members).set(e.data.user_id, e.data.role) };
    case 'MemberRemoved': {
      const members = new Map(s.members);
      members.delete(e.data.user_id);
      return { ...s, members };
    }
    case 'DimensionDefined':
      return {
        ...s,
        dimensions: new Map(s.dimensions).set(e.data.definition_id, { key: e.data.key, archived: false }),
      };
    case 'DimensionArchived': {
      const d = s.dimensions.get(e.data.definition_id);
      return d
        ? { ...s, dimensions: new Map(s.dimensions).set(e.data.definition_id, { ...d, archived: true }) }
        : s;
    }
    default:
      return assertNever(e);
  }
};

export const workspaceDecider: Decider<WorkspaceCommand, WorkspaceEvent, Workspace> = {
  initialState: () => ({ exists: false, name: '', members: new Map(), dimensions: new Map() }),
  evolve,
  decide,
};
