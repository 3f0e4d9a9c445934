import { ServiceError } from '../../lib/errors.js';
import { idFromNames } from '../../lib/ids.js';
import type { OrganizationDirectory, WorkspaceDirectory } from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, checkName, runCommand } from '../service.js';
import { checkSpendCapChange, type SpendCapChange, spendCapCommand } from '../spend-cap/decider.js';
import { organizationDecider, organizationStream } from './decider.js';
import type { OrganizationCommand } from './events.js';

export interface OrganizationDeps extends CommandDeps {
  workspaces: WorkspaceDirectory;
  directory: OrganizationDirectory;
}

/** Organizations: their provider disallow list, tracing (SPEC 1.10) and monthly spend cap. */
export const organizationCommands = (deps: OrganizationDeps) => {
  const run = (orgId: string, workspaceId: string, command: OrganizationCommand, actor: Actor, retries = 0) =>
    runCommand(deps, organizationDecider, organizationStream(orgId), command, actor, workspaceId, {
      retries,
    });

  return {
    async createOrganization(
      actor: Actor,
      workspaceId: string,
      name: unknown,
      options: { ifMissing?: boolean } = {},
    ) {
      const n = checkName(name);
      if (!(await deps.workspaces.exists(workspaceId)))
        throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
      const orgId = idFromNames('org', workspaceId, n);
      if (options.ifMissing && (await deps.directory.organization(orgId)))
        return { org_id: orgId, created: false };
      await run(orgId, workspaceId, { type: 'CreateOrganization', orgId, workspaceId, name: n }, actor);
      return { org_id: orgId, created: true };
    },

    async setProviderDisallowList(actor: Actor, orgId: string, providers: string[]) {
      const org = await deps.directory.requireOrganization(orgId);
      await run(
        orgId,
        org.workspace_id,
        { type: 'SetProviderDisallowList', providers },
        actor,
        CONFLICT_RETRIES,
      );
    },

    async setOrganizationTracing(actor: Actor, orgId: string, enabled: boolean) {
      const org = await deps.directory.requireOrganization(orgId);
      await run(
        orgId,
        org.workspace_id,
        { type: 'SetOrganizationTracing', enabled },
        actor,
        CONFLICT_RETRIES,
      );
    },

    async setOrganizationSpendCap(actor: Actor, orgId: string, change: SpendCapChange) {
      checkSpendCapChange(change);
      const org = await deps.directory.requireOrganization(orgId);
      await run(orgId, org.workspace_id, spendCapCommand('org', org, change), actor, CONFLICT_RETRIES);
    },
  };
};

export type OrganizationCommands = ReturnType<typeof organizationCommands>;
