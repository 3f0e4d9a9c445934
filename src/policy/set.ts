import { POLICY_LAYERS, type PolicyLayer } from './document.js';
import {
  evaluatePolicy,
  type PolicyDecision,
  type PolicyQuery,
  type ResolvedPolicy,
  resolvePolicies,
  type ScopedPolicy,
} from './evaluate.js';

/**
 * Every policy in force, indexed by layer and scope, as the gateway, the policy role and trace
 * ingest hold it in memory: a request with no policy on its organization, project or key costs a
 * few map lookups.
 */
export class PolicySet {
  private readonly byTarget = new Map<string, ScopedPolicy>();
  private readonly resolved = new Map<string, readonly ResolvedPolicy[]>();

  constructor(policies: readonly ScopedPolicy[]) {
    for (const p of policies) this.byTarget.set(`${p.layer}:${p.scope}:${p.target_id}`, p);
  }

  get size(): number {
    return this.byTarget.size;
  }

  /** One layer's policies of a request's scopes, broadest first. */
  scopes(layer: PolicyLayer, orgId: string, projectId: string, apiKeyId: string): ScopedPolicy[] {
    const out: ScopedPolicy[] = [];
    for (const key of [`org:${orgId}`, `project:${projectId}`, `api_key:${apiKeyId}`]) {
      const p = this.byTarget.get(`${layer}:${key}`);
      if (p) out.push(p);
    }
    return out;
  }

  /** Each layer that has a policy on these scopes, resolved (operator first); none: []. */
  resolve(orgId: string, projectId: string, apiKeyId: string): readonly ResolvedPolicy[] {
    if (this.byTarget.size === 0) return NONE;
    const key = `${orgId}\n${projectId}\n${apiKeyId}`;
    let r = this.resolved.get(key);
    if (!r) {
      r = POLICY_LAYERS.map((layer) => this.scopes(layer, orgId, projectId, apiKeyId))
        .filter((scoped) => scoped.length > 0)
        .map(resolvePolicies);
      // Bounded: the set is rebuilt whenever a policy changes, and keys are finite.
      if (this.resolved.size >= 50_000) this.resolved.clear();
      this.resolved.set(key, r);
    }
    return r;
  }

  /**
   * Whether full payload capture is permitted (SPEC 1.10, 2.3) for a scope without a request:
   * trace ingest, whose keys belong to a project (no API key scope applies).
   */
  payloadCapture(orgId: string, projectId: string): boolean {
    return this.resolve(orgId, projectId, '').every((r) => r.payload_capture?.value ?? true);
  }

  evaluate(query: PolicyQuery): PolicyDecision {
    return evaluatePolicy(query, this.resolve(query.org_id, query.project_id, query.api_key_id));
  }
}

const NONE: readonly ResolvedPolicy[] = Object.freeze([]);
