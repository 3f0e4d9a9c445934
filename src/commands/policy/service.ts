import { type PolicyLayer, type PolicyScope, parsePolicyDocument } from '../../policy/document.js';
import {
  type ApiKeyDirectory,
  type OrganizationDirectory,
  type ProjectDirectory,
  requireOwner,
} from '../ports.js';
import { type Actor, CONFLICT_RETRIES, type CommandDeps, runCommand } from '../service.js';
import { policyDecider, policyStream } from './decider.js';
import type { PolicyCommand, PolicyPlacement } from './events.js';

export interface PolicyDeps extends CommandDeps {
  directory: OrganizationDirectory & ProjectDirectory & ApiKeyDirectory;
}

export interface PolicyTarget {
  layer: PolicyLayer;
  scope: PolicyScope;
  id: string;
}

/**
 * Policies on organizations, projects and API keys (SPEC 1.9). The document is checked here (400
 * naming the field), the scope must exist (404), and each change is one event on the scope's
 * policy stream, audited as policy.set or policy.cleared in the workspace's trail (SPEC 6).
 */
export const policyCommands = (deps: PolicyDeps) => {
  const placementOf = async (target: PolicyTarget): Promise<PolicyPlacement> => {
    const owner = await requireOwner(deps.directory, target.scope, target.id);
    return {
      layer: target.layer,
      scope: target.scope,
      target_id: target.id,
      org_id: owner.org_id,
      workspace_id: owner.workspace_id,
    };
  };
  const run = (placement: PolicyPlacement, command: PolicyCommand, actor: Actor) =>
    runCommand(
      deps,
      policyDecider,
      policyStream(placement.scope, placement.target_id),
      command,
      actor,
      placement.workspace_id,
      // Without an expected revision a concurrent change is absorbed (the last writer wins, as a
      // PUT does); with one, the caller asked to be told (409).
      { retries: command.expectedRevision === undefined ? CONFLICT_RETRIES : 0 },
    );

  return {
    /** Parses and sets a policy document; resolves with the revision now in force. */
    async setPolicy(
      actor: Actor,
      target: PolicyTarget,
      document: unknown,
      options: { expectedRevision?: number } = {},
    ) {
      const parsed = parsePolicyDocument(document);
      const placement = await placementOf(target);
      const result = await run(
        placement,
        {
          type: 'SetPolicy',
          placement,
          document: parsed,
          ...(options.expectedRevision !== undefined ? { expectedRevision: options.expectedRevision } : {}),
        },
        actor,
      );
      return { revision: result.state.layers[target.layer].revision, changed: result.events.length > 0 };
    },

    /** Every revision of a scope's policies, both layers, oldest first: the append-only history (SPEC 1.9). */
    async policyHistory(target: Omit<PolicyTarget, 'layer'>) {
      const { events } = await deps.store.readStream(policyStream(target.scope, target.id));
      return events.map((e) => ({
        revision: e.streamVersion,
        layer: (e.data as { layer?: PolicyLayer }).layer ?? 'workspace',
        change: e.type === 'PolicySet' ? ('set' as const) : ('cleared' as const),
        document: e.type === 'PolicySet' ? (e.data as { document: unknown }).document : null,
        at: typeof e.metadata.now === 'string' ? e.metadata.now : e.recordedAt.toISOString(),
        by: typeof e.metadata.actor === 'string' ? e.metadata.actor : null,
      }));
    },

    async clearPolicy(actor: Actor, target: PolicyTarget, options: { expectedRevision?: number } = {}) {
      const placement = await placementOf(target);
      const result = await run(
        placement,
        {
          type: 'ClearPolicy',
          placement,
          ...(options.expectedRevision !== undefined ? { expectedRevision: options.expectedRevision } : {}),
        },
        actor,
      );
      return { revision: result.state.layers[target.layer].revision };
    },
  };
};
