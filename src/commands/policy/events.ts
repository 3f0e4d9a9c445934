import type { PolicyDocument, PolicyLayer, PolicyScope } from '../../policy/document.js';

/**
 * Policies (SPEC 1.9) as append-only events: each scope (an organization, a project, an API key) has
 * a stream of its own, `policy-<scope>.<id>`, holding both layers' policies (operator and
 * workspace); a layer's revision is the stream version of its last change. Setting a policy stores
 * the whole document; the history is the stream.
 */
export interface PolicyPlacement {
  layer: PolicyLayer;
  scope: PolicyScope;
  target_id: string;
  org_id: string;
  workspace_id: string;
}

export type PolicyEvent =
  | { type: 'PolicySet'; data: PolicyPlacement & { document: PolicyDocument } }
  | { type: 'PolicyCleared'; data: PolicyPlacement };

export type PolicyCommand =
  | {
      type: 'SetPolicy';
      placement: PolicyPlacement;
      document: PolicyDocument;
      /** The revision the caller read (optimistic concurrency); absent: whatever is current. */
      expectedRevision?: number;
    }
  | { type: 'ClearPolicy'; placement: PolicyPlacement; expectedRevision?: number };
