import { idFromNames } from '../../lib/ids.js';
import type { OrganizationDirectory, ProjectDirectory } from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, checkName, runCommand } from '../service.js';
import { checkSpendCapChange, type SpendCapChange, spendCapCommand } from '../spend-cap/decider.js';
import { projectDecider, projectStream } from './decider.js';
import type { ProjectCommand } from './events.js';

export interface ProjectDeps extends CommandDeps {
  directory: OrganizationDirectory & ProjectDirectory;
}

/** Projects of an organization: tracing (SPEC 1.10) and monthly spend cap. */
export const projectCommands = (deps: ProjectDeps) => {
  const run = (projectId: string, workspaceId: string, command: ProjectCommand, actor: Actor, retries = 0) =>
    runCommand(deps, projectDecider, projectStream(projectId), command, actor, workspaceId, { retries });

  return {
    async createProject(actor: Actor, orgId: string, name: unknown, options: { ifMissing?: boolean } = {}) {
      const n = checkName(name);
      const org = await deps.directory.requireOrganization(orgId, 'org_id');
      const projectId = idFromNames('prj', orgId, n);
      if (options.ifMissing && (await deps.directory.project(projectId)))
        return { project_id: projectId, created: false };
      await run(
        projectId,
        org.workspace_id,
        { type: 'CreateProject', projectId, orgId, workspaceId: org.workspace_id, name: n },
        actor,
      );
      return { project_id: projectId, created: true };
    },

    async setProjectTracing(actor: Actor, projectId: string, enabled: boolean) {
      const project = await deps.directory.requireProject(projectId);
      await run(
        projectId,
        project.workspace_id,
        { type: 'SetProjectTracing', enabled },
        actor,
        CONFLICT_RETRIES,
      );
    },

    async setProjectSpendCap(actor: Actor, projectId: string, change: SpendCapChange) {
      checkSpendCapChange(change);
      const project = await deps.directory.requireProject(projectId);
      const command = spendCapCommand('project', project, change);
      await run(projectId, project.workspace_id, command, actor, CONFLICT_RETRIES);
    },
  };
};

export type ProjectCommands = ReturnType<typeof projectCommands>;
