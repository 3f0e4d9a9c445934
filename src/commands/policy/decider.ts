import { assertNever } from '../../lib/assert.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { ServiceError } from '../../lib/errors.js';
import type { PolicyLayer, PolicyScope } from '../../policy/document.js';
import type { Decider } from '../decider.js';
import type { PolicyCommand, PolicyEvent } from './events.js';

/** One layer's policy on the scope. */
export interface LayerState {
  /** The stream version of the layer's last change; 0 before any. */
  revision: number;
  /** The canonical JSON of the document in force; null when none is. */
  document: string | null;
}

export interface PolicyState {
  /** The stream version: every change of either layer moves it. */
  version: number;
  layers: Record<PolicyLayer, LayerState>;
}

const NONE: LayerState = { revision: 0, document: null };

export const policyStream = (scope: PolicyScope, targetId: string) => `policy-${scope}.${targetId}`;

const checkRevision = (expected: number | undefined, s: LayerState): void => {
  if (expected !== undefined && expected !== s.revision)
    throw new ServiceError(
      'precondition_failed',
      `the policy is at revision ${s.revision}, not ${expected}: read it again and reapply your change`,
      { param: 'expected_revision' },
    );
};

/** Events from before layers were named are the workspace's. */
const layerOf = (p: { layer?: PolicyLayer }): PolicyLayer => p.layer ?? 'workspace';

/** A policy per scope and layer (SPEC 1.9): set whole (a no-op when unchanged), or cleared once. */
export const policyDecider: Decider<PolicyCommand, PolicyEvent, PolicyState> = {
  initialState: () => ({ version: 0, layers: { operator: NONE, workspace: NONE } }),
  decide: (cmd, s) => {
    const layer = s.layers[cmd.placement.layer];
    switch (cmd.type) {
      case 'SetPolicy': {
        checkRevision(cmd.expectedRevision, layer);
        if (layer.document === canonicalJson(cmd.document)) return [];
        return [{ type: 'PolicySet', data: { ...cmd.placement, document: cmd.document } }];
      }
      case 'ClearPolicy':
        checkRevision(cmd.expectedRevision, layer);
        if (layer.document === null)
          throw new ServiceError(
            'not_found',
            `no ${cmd.placement.layer} policy is set on this ${cmd.placement.scope === 'api_key' ? 'API key' : cmd.placement.scope}`,
          );
        return [{ type: 'PolicyCleared', data: cmd.placement }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    const version = s.version + 1;
    const layer = layerOf(e.data);
    switch (e.type) {
      case 'PolicySet':
        return {
          version,
          layers: { ...s.layers, [layer]: { revision: version, document: canonicalJson(e.data.document) } },
        };
      case 'PolicyCleared':
        return { version, layers: { ...s.layers, [layer]: { revision: version, document: null } } };
      default:
        return assertNever(e);
    }
  },
};
