import { hashSecret } from '../../lib/crypto.js';
import { newId, newSecret } from '../../lib/ids.js';
import type { ProjectDirectory, TraceIngestKeyDirectory } from '../ports.js';
import { type Actor, type CommandDeps, checkName, runCommand, VISIBLE_PREFIX_LENGTH } from '../service.js';
import { traceIngestKeyDecider, traceIngestKeyStream } from './decider.js';
import type { TraceIngestKeyCommand } from './events.js';

/** Visible prefix of a trace-ingest key (SPEC 4.3, 5: project-level trace ingest key). */
export const TRACE_INGEST_KEY_PREFIX = 'svc_ti_';

export interface TraceIngestKeyDeps extends CommandDeps {
  directory: ProjectDirectory & TraceIngestKeyDirectory;
}

/** Project-scoped trace-ingest keys (SPEC 4.6): the secret is answered once, at creation and rotation. */
export const traceIngestKeyCommands = (deps: TraceIngestKeyDeps) => {
  const run = (id: string, workspaceId: string, command: TraceIngestKeyCommand, actor: Actor) =>
    runCommand(deps, traceIngestKeyDecider, traceIngestKeyStream(id), command, actor, workspaceId);
  const now = () => deps.clock().toISOString();

  return {
    async createTraceIngestKey(actor: Actor, projectId: string, name: unknown) {
      const n = checkName(name);
      const project = await deps.directory.requireProject(projectId, 'project_id');
      const id = newId('tik');
      const secret = newSecret(TRACE_INGEST_KEY_PREFIX);
      await run(
        id,
        project.workspace_id,
        {
          type: 'CreateTraceIngestKey',
          id,
          projectId,
          orgId: project.org_id,
          workspaceId: project.workspace_id,
          name: n,
          prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH),
          secretHash: hashSecret(secret),
        },
        actor,
      );
      return { id, secret, prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH), project_id: projectId, name: n };
    },

    async rotateTraceIngestKey(actor: Actor, id: string) {
      const key = await deps.directory.requireTraceIngestKey(id);
      const secret = newSecret(TRACE_INGEST_KEY_PREFIX);
      await run(
        id,
        key.workspace_id,
        {
          type: 'RotateTraceIngestKey',
          prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH),
          secretHash: hashSecret(secret),
          now: now(),
        },
        actor,
      );
      return { id, secret, prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH) };
    },

    async setTraceIngestKeyTracing(actor: Actor, id: string, enabled: boolean) {
      const key = await deps.directory.requireTraceIngestKey(id);
      await run(id, key.workspace_id, { type: 'SetTraceIngestKeyTracing', enabled }, actor);
    },

    async revokeTraceIngestKey(actor: Actor, id: string) {
      const key = await deps.directory.requireTraceIngestKey(id);
      await run(id, key.workspace_id, { type: 'RevokeTraceIngestKey', now: now() }, actor);
    },
  };
};

export type TraceIngestKeyCommands = ReturnType<typeof traceIngestKeyCommands>;
