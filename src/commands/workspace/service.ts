import { ServiceError } from '../../lib/errors.js';
import { idFromNames, newId } from '../../lib/ids.js';
import type { WorkspaceDirectory } from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, checkName, runCommand } from '../service.js';
import { workspaceDecider, workspaceStream } from './decider.js';
import type { WorkspaceCommand, WorkspaceRole } from './events.js';

export interface WorkspaceDeps extends CommandDeps {
  workspaces: WorkspaceDirectory;
}

/** Workspaces, their members and their reporting dimensions (SPEC 2.10, 4.6). */
export const workspaceCommands = (deps: WorkspaceDeps) => {
  const run = (workspaceId: string, command: WorkspaceCommand, actor: Actor, retries = 0) =>
    runCommand(deps, workspaceDecider, workspaceStream(workspaceId), command, actor, workspaceId, {
      retries,
    });

  return {
    async createWorkspace(actor: Actor, name: unknown, options: { ifMissing?: boolean } = {}) {
      const n = checkName(name);
      const workspaceId = idFromNames('ws', n);
      if (options.ifMissing && (await deps.workspaces.exists(workspaceId)))
        return { workspace_id: workspaceId, created: false };
      await run(workspaceId, { type: 'CreateWorkspace', workspaceId, name: n }, actor);
      return { workspace_id: workspaceId, created: true };
    },

    /** Gives a registered user a role in a workspace; the role it has already is a no-op. */
    async addMember(
      actor: Actor,
      workspaceId: string,
      member: { userId: string; email: string; role: WorkspaceRole },
    ) {
      if (!(await deps.workspaces.exists(workspaceId)))
        throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
      await run(workspaceId, { type: 'AddMember', ...member }, actor, CONFLICT_RETRIES);
    },

    /** An unknown workspace is the decider's 404: its own stream says whether it exists. */
    async defineDimension(actor: Actor, workspaceId: string, key: unknown, description: unknown) {
      if (typeof key !== 'string') throw new ServiceError('bad_request', 'key is required', { param: 'key' });
      if (description !== undefined && typeof description !== 'string')
        throw new ServiceError('bad_request', 'description must be a string', { param: 'description' });
      const definitionId = newId('dim');
      await run(
        workspaceId,
        { type: 'DefineDimension', definitionId, key, description: description ?? '' },
        actor,
        CONFLICT_RETRIES,
      );
      return { definition_id: definitionId, workspace_id: workspaceId, key, description: description ?? '' };
    },

    async archiveDimension(actor: Actor, workspaceId: string, definitionId: string) {
      await run(
        workspaceId,
        { type: 'ArchiveDimension', definitionId, now: deps.clock().toISOString() },
        actor,
        CONFLICT_RETRIES,
      );
    },
  };
};

export type WorkspaceCommands = ReturnType<typeof workspaceCommands>;
