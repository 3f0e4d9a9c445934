import { ServiceError } from '../lib/errors.js';
import type { PolicyDecision, PolicyQuery } from '../policy/evaluate.js';
import type { PolicySet } from '../policy/set.js';
import type { CanonicalRequest } from '../providers/contract.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import type { PolicyPort, RequestScope } from './scope.js';

export const inProcessPolicy = (current: () => PolicySet): PolicyPort => ({
  evaluate: (query) => current().evaluate(query),
});

/** SVC_POLICY_FAIL_MODE: what a request meets when the policy service does not answer in time. */
export type PolicyFailMode = 'open' | 'closed';

export interface RemotePolicyOptions {
  /** Each call's deadline (SVC_POLICY_DEADLINE_MS). */
  deadlineMs: number;
  /** How long a decision is reused for the same query (SVC_POLICY_CACHE_MS); 0 disables. */
  cacheMs: number;
  failMode: PolicyFailMode;
  /** Decisions kept at most; the oldest go first. */
  cacheEntries?: number;
  now?: () => number;
  onError?: (err: unknown) => void;
}

/** What a failed-open request runs under: no rule of any policy, and the version says why. */
export const FAILED_OPEN_VERSION = 'unavailable';

/**
 * The policy service could not be reached or did not answer within the deadline: the only failure
 * the fail mode governs. Any other failure (a refused query, an answer that makes no sense) is a
 * 503 or the caller's 400 whatever the mode, so it can never open the gate.
 */
export class PolicyUnreachableError extends Error {
  override readonly name = 'PolicyUnreachableError';
}

/**
 * PolicyService.Evaluate behind a short decision cache, a deadline and a fail mode. `call` is the
 * gRPC client (edges/grpc/policy-client.ts). Closed (the default): a request is refused with 503
 * while the service cannot answer; open: it proceeds as if no policy applied, without payload
 * capture, and its record says so (policy version `unavailable`).
 */
export class RemotePolicy implements PolicyPort {
  private readonly cache = new Map<string, { at: number; decision: PolicyDecision }>();
  private readonly now: () => number;

  constructor(
    private readonly call: (query: PolicyQuery, deadlineMs: number) => Promise<PolicyDecision>,
    private readonly options: RemotePolicyOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async evaluate(query: PolicyQuery): Promise<PolicyDecision> {
    const key = this.options.cacheMs > 0 ? JSON.stringify(query) : '';
    const now = this.now();
    if (key) {
      const hit = this.cache.get(key);
      if (hit && now - hit.at < this.options.cacheMs) return hit.decision;
    }
    let decision: PolicyDecision;
    try {
      decision = await this.call(query, this.options.deadlineMs);
    } catch (err) {
      this.options.onError?.(err);
      if (err instanceof ServiceError) throw err;
      if (err instanceof PolicyUnreachableError && this.options.failMode === 'open') return failedOpen(query);
      throw new ServiceError(
        'service_unavailable',
        err instanceof PolicyUnreachableError
          ? 'the policy service did not answer in time; requests are refused until it does (SVC_POLICY_FAIL_MODE=closed)'
          : 'the policy service could not decide on this request',
      );
    }
    if (key) {
      this.cache.delete(key);
      this.cache.set(key, { at: now, decision });
      const max = this.options.cacheEntries ?? 10_000;
      if (this.cache.size > max) this.cache.delete(this.cache.keys().next().value!);
    }
    return decision;
  }
}

const failedOpen = (query: PolicyQuery): PolicyDecision => ({
  allowed: true,
  code: 'allowed',
  reasons: [
    'the policy service did not answer in time; proceeding without policy (SVC_POLICY_FAIL_MODE=open)',
  ],
  policy_version: FAILED_OPEN_VERSION,
  allowed_candidates: query.candidates.map((_, i) => i),
  max_tokens_ceiling: null,
  // Capture is a privacy control: without a policy that permits it, nothing is captured.
  payload_capture: false,
  rate_limits: { requests_per_minute: null, tokens_per_minute: null },
});

/** The output-token field of each route's body that states the caller's ceiling. */
const OUTPUT_FIELD: Partial<Record<CanonicalRequest['route'], string>> = {
  // OpenAI's current spelling (max_tokens is deprecated and refused by reasoning models).
  '/v1/chat/completions': 'max_completion_tokens',
  '/v1/responses': 'max_output_tokens',
  // The messages wire requires max_tokens, so an alternate request always states one.
};

/** Characters of the caller's model selector a policy query carries. */
const MODEL_IN_QUERY = 256;

export const policyQueryOf = (scope: RequestScope, candidates: readonly RegistryEndpoint[]): PolicyQuery => {
  const { canonical, key } = scope.input;
  return {
    org_id: key.orgId,
    project_id: key.projectId,
    api_key_id: key.apiKeyId,
    route: canonical.route,
    // Only named in reasons: a selector padded to any length must not change what is sent.
    model:
      canonical.model.length > MODEL_IN_QUERY
        ? `${canonical.model.slice(0, MODEL_IN_QUERY)}…`
        : canonical.model,
    max_tokens: canonical.maxTokens ?? null,
    candidates: candidates.map((c) => ({
      provider: c.lane,
      adapter: c.adapter,
      model: c.model,
      provider_model_id: c.provider_model_id,
    })),
  };
};

export type PolicyAdmission =
  | { ok: true; candidates: RegistryEndpoint[]; decision: PolicyDecision }
  | { ok: false; error: ServiceError };

/**
 * Admission by policy (SPEC 1.9): the decision on the selected candidates, recorded on the request.
 * A denial is `policy_denied` (403; permission_error on the alternate edge) naming the rule; an
 * allowed request keeps the candidates the policy allows, has the ceiling written into its body when
 * it stated no output limit, and loses full payload capture where the policy does not permit it.
 */
export async function admitByPolicy(
  scope: RequestScope,
  candidates: RegistryEndpoint[],
): Promise<PolicyAdmission> {
  let decision: PolicyDecision;
  try {
    decision = await scope.deps.policy.evaluate(policyQueryOf(scope, candidates));
  } catch (err) {
    if (err instanceof ServiceError) return { ok: false, error: err };
    throw err;
  }
  scope.completed.policy = decision.policy_version
    ? { version: decision.policy_version, decision: decision.code }
    : null;
  scope.capturePermitted = decision.payload_capture;
  // The source still says what asked for full tracing; full says that nothing was captured.
  if (!decision.payload_capture && scope.completed.tracing.full)
    scope.completed.tracing = { ...scope.completed.tracing, full: false };
  if (!decision.allowed)
    return {
      ok: false,
      error: new ServiceError(
        'policy_denied',
        `denied by policy (${decision.code}): ${decision.reasons.join('; ')}`,
        {
          details: { policy_code: decision.code, policy_version: decision.policy_version },
        },
      ),
    };
  const canonical = scope.input.canonical;
  const field = OUTPUT_FIELD[canonical.route];
  if (decision.max_tokens_ceiling !== null && canonical.maxTokens === undefined && field) {
    canonical.maxTokens = decision.max_tokens_ceiling;
    canonical.raw = Object.assign({}, canonical.raw, { [field]: decision.max_tokens_ceiling });
  }
  const allowed =
    decision.allowed_candidates.length === candidates.length
      ? candidates
      : decision.allowed_candidates.map((i) => candidates[i]!);
  return { ok: true, candidates: allowed, decision };
}

/**
 * The key's per-minute limits a policy sets, across every gateway process (SPEC 7.4: 429 with
 * Retry-After in whole seconds). Null when admitted; the refusal answer otherwise.
 */
export async function admitByKeyLimits(scope: RequestScope, decision: PolicyDecision) {
  const { requests_per_minute: rpm, tokens_per_minute: tpm } = decision.rate_limits;
  const limiter = scope.deps.keyLimits;
  if ((rpm === null && tpm === null) || !limiter) return null;
  const key = scope.input.key.apiKeyId;
  const refusal = await limiter.admit(key, { requestsPerMinute: rpm, tokensPerMinute: tpm });
  if (refusal) {
    const what = refusal.limit === 'tokens_per_minute' ? 'tokens' : 'requests';
    return scope.fail(
      new ServiceError(
        'rate_limit_error',
        `rate limit of ${refusal.value} ${what} per minute reached for this API key (policy); retry in ${refusal.retryAfterSeconds} s`,
      ),
      refusal.retryAfterSeconds * 1_000,
    );
  }
  scope.spendsTokens = tpm !== null;
  return null;
}
