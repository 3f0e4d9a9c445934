import { hashSecret } from '../../lib/crypto.js';
import { ServiceError } from '../../lib/errors.js';
import { newId, newSecret } from '../../lib/ids.js';
import type { ApiKeyDirectory, DimensionDirectory, ProjectDirectory } from '../ports.js';
import {
  type Actor,
  CONFLICT_RETRIES,
  type CommandDeps,
  checkName,
  runCommand,
  VISIBLE_PREFIX_LENGTH,
} from '../service.js';
import { checkSpendCapChange, type SpendCapChange, spendCapCommand } from '../spend-cap/decider.js';
import { apiKeyDecider, apiKeyStream } from './decider.js';
import type { ApiKeyCommand } from './events.js';

/** Visible prefix of a service API key (SPEC 5: the gateway's bearer). */
export const API_KEY_PREFIX = 'svc_sk_';

export interface ApiKeyDeps extends CommandDeps {
  directory: ProjectDirectory & ApiKeyDirectory & DimensionDirectory;
}

/**
 * Service API keys of a project: minted once, revoked, tracing (SPEC 1.10), monthly spend cap and
 * reporting-dimension assignments (SPEC 2.10).
 */
export const apiKeyCommands = (deps: ApiKeyDeps) => {
  const run = (apiKeyId: string, workspaceId: string, command: ApiKeyCommand, actor: Actor, retries = 0) =>
    runCommand(deps, apiKeyDecider, apiKeyStream(apiKeyId), command, actor, workspaceId, { retries });
  const now = () => deps.clock().toISOString();

  return {
    async createApiKey(actor: Actor, projectId: string, name: unknown) {
      const n = checkName(name);
      const project = await deps.directory.requireProject(projectId, 'project_id');
      const apiKeyId = newId('key');
      const secret = newSecret(API_KEY_PREFIX);
      const prefix = secret.slice(0, VISIBLE_PREFIX_LENGTH);
      await run(
        apiKeyId,
        project.workspace_id,
        {
          type: 'CreateApiKey',
          apiKeyId,
          projectId,
          orgId: project.org_id,
          workspaceId: project.workspace_id,
          name: n,
          prefix,
          secretHash: hashSecret(secret),
        },
        actor,
      );
      return {
        api_key_id: apiKeyId,
        api_key: secret,
        prefix,
        project_id: projectId,
        org_id: project.org_id,
        workspace_id: project.workspace_id,
        name: n,
      };
    },

    async revokeApiKey(actor: Actor, apiKeyId: string) {
      const key = await deps.directory.requireApiKey(apiKeyId);
      await run(apiKeyId, key.workspace_id, { type: 'RevokeApiKey', now: now() }, actor);
    },

    async setApiKeyTracing(actor: Actor, apiKeyId: string, enabled: boolean) {
      const key = await deps.directory.requireApiKey(apiKeyId);
      await run(apiKeyId, key.workspace_id, { type: 'SetApiKeyTracing', enabled }, actor, CONFLICT_RETRIES);
    },

    async setApiKeySpendCap(actor: Actor, apiKeyId: string, change: SpendCapChange) {
      checkSpendCapChange(change);
      const key = await deps.directory.requireApiKey(apiKeyId);
      await run(apiKeyId, key.workspace_id, spendCapCommand('api_key', key, change), actor, CONFLICT_RETRIES);
    },

    async assignDimension(actor: Actor, apiKeyId: string, definitionId: unknown, value: unknown) {
      if (typeof definitionId !== 'string')
        throw new ServiceError('bad_request', 'definition_id is required', { param: 'definition_id' });
      if (typeof value !== 'string')
        throw new ServiceError('bad_request', 'value must be a string', { param: 'value' });
      const key = await deps.directory.requireApiKey(apiKeyId);
      const def = await deps.directory.dimension(definitionId);
      const definitionActive =
        def !== null && def.workspace_id === key.workspace_id && def.archived_at === null;
      await run(
        apiKeyId,
        key.workspace_id,
        { type: 'AssignDimension', definitionId, value, now: now(), definitionActive },
        actor,
        CONFLICT_RETRIES,
      );
    },

    async endDimensionAssignment(actor: Actor, apiKeyId: string, definitionId: string, endAt?: string) {
      const key = await deps.directory.requireApiKey(apiKeyId);
      const at = endAt ?? now();
      if (Number.isNaN(Date.parse(at)))
        throw new ServiceError('bad_request', 'end_at must be an RFC 3339 timestamp', { param: 'end_at' });
      await run(
        apiKeyId,
        key.workspace_id,
        { type: 'EndDimensionAssignment', definitionId, endAt: new Date(at).toISOString() },
        actor,
        CONFLICT_RETRIES,
      );
    },
  };
};

export type ApiKeyCommands = ReturnType<typeof apiKeyCommands>;
