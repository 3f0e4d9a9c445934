import {
  globMatch,
  matchesAny,
  type PolicyDocument,
  type PolicyLayer,
  type PolicyScope,
} from './document.js';

/**
 * Policy evaluation (SPEC 1.9, 4.8 PolicyService.Evaluate): one pure function from a query and the
 * policies of its scopes to a decision. The gateway runs it in process, the policy role behind
 * gRPC; both call exactly this code, so the answers agree (the parity test holds them to it).
 */

/** One request as the policy sees it, after the registry chose its candidates. */
export interface PolicyQuery {
  org_id: string;
  project_id: string;
  api_key_id: string;
  /** The gateway route (SPEC 4.1, 4.2), e.g. `/v1/chat/completions`. */
  route: string;
  /** The model selector as the caller wrote it. */
  model: string;
  /** The output tokens the request asks for; null when it states none. */
  max_tokens: number | null;
  /** The candidates the registry selected, in order: lane, adapter and the two model names. */
  candidates: readonly PolicyCandidate[];
}

export interface PolicyCandidate {
  provider: string;
  adapter: string;
  model: string;
  provider_model_id: string;
}

/** Stable codes of a denial; the client sees `policy_denied` and this in the message. */
export type PolicyDenial =
  | 'route_not_allowed'
  | 'max_tokens_exceeded'
  | 'provider_not_allowed'
  | 'model_not_allowed';

export interface PolicyDecision {
  allowed: boolean;
  /** `allowed`, or why not. */
  code: 'allowed' | PolicyDenial;
  /** Human-readable: why the request was denied, or which candidates the policy removed. */
  reasons: string[];
  /** The policies that decided, as `scope:id@revision` joined by commas; empty when none applies. */
  policy_version: string;
  /** Indexes into query.candidates of those the policy lets the request use, in order. */
  allowed_candidates: number[];
  /** The ceiling to apply when the request states no max_tokens; null: none. */
  max_tokens_ceiling: number | null;
  /** Whether full payload capture may happen (SPEC 1.10, 2.3). */
  payload_capture: boolean;
  rate_limits: { requests_per_minute: number | null; tokens_per_minute: number | null };
}

/** A policy in force on one scope and layer: its document and the revision it was set at. */
export interface ScopedPolicy {
  layer: PolicyLayer;
  scope: PolicyScope;
  target_id: string;
  revision: number;
  document: PolicyDocument;
}

/** A value of a rule and the policy that stated it (for reasons). */
interface Stated<T> {
  value: T;
  from: ScopedPolicy;
}

/** An allow list (the narrowest stated) and every deny pattern of the scopes, each with its source. */
interface ListRule {
  allow: Stated<readonly string[]> | null;
  deny: Stated<string>[];
}

/** One layer's rules after merging its scopes. */
export interface ResolvedPolicy {
  providers: ListRule | null;
  models: ListRule | null;
  routes: ListRule | null;
  max_tokens: Stated<number> | null;
  payload_capture: Stated<boolean> | null;
  requests_per_minute: Stated<number> | null;
  tokens_per_minute: Stated<number> | null;
  /** `layer:scope:id@revision` of each policy that took part, joined by commas. */
  version: string;
}

const describeScope = (s: ScopedPolicy): string =>
  `the ${s.layer === 'operator' ? 'operator' : 'workspace'} policy of ${s.scope === 'api_key' ? 'API key' : s.scope} ${s.target_id}`;

const mergeList = (
  broader: ListRule | null,
  stated: { allow?: string[] | undefined; deny?: string[] | undefined } | null | undefined,
  from: ScopedPolicy,
): ListRule | null => {
  if (stated === undefined) return broader;
  if (stated === null) return null;
  return {
    allow: stated.allow ? { value: stated.allow, from } : (broader?.allow ?? null),
    deny: [...(broader?.deny ?? []), ...(stated.deny ?? []).map((value) => ({ value, from }))],
  };
};

const mergeValue = <T>(broader: Stated<T> | null, stated: T | null | undefined, from: ScopedPolicy) =>
  stated === undefined ? broader : stated === null ? null : { value: stated, from };

/**
 * Merges one layer's policies of a request's scopes, broadest first (org, project, API key), field
 * by field: deny patterns add up; the narrowest allow list, ceiling, capture setting and each rate
 * limit win; `null` lifts what the broader scopes said (a whole list rule, a value, all the rate
 * limits or one of them).
 */
export const resolvePolicies = (scoped: readonly ScopedPolicy[]): ResolvedPolicy => {
  const r: ResolvedPolicy = {
    providers: null,
    models: null,
    routes: null,
    max_tokens: null,
    payload_capture: null,
    requests_per_minute: null,
    tokens_per_minute: null,
    version: scoped.map((s) => `${s.layer}:${s.scope}:${s.target_id}@${s.revision}`).join(','),
  };
  for (const s of scoped) {
    const d = s.document;
    r.providers = mergeList(r.providers, d.providers, s);
    r.models = mergeList(r.models, d.models, s);
    r.routes = mergeList(r.routes, d.routes, s);
    r.max_tokens = mergeValue(r.max_tokens, d.max_tokens, s);
    r.payload_capture = mergeValue(r.payload_capture, d.payload_capture, s);
    if (d.rate_limits === null) {
      r.requests_per_minute = null;
      r.tokens_per_minute = null;
    } else if (d.rate_limits) {
      r.requests_per_minute = mergeValue(r.requests_per_minute, d.rate_limits.requests_per_minute, s);
      r.tokens_per_minute = mergeValue(r.tokens_per_minute, d.rate_limits.tokens_per_minute, s);
    }
  }
  return r;
};

type Verdict = { ok: true } | { ok: false; why: string };
const PASS: Verdict = { ok: true };

const listVerdict = (rule: ListRule, values: readonly string[], what: string): Verdict => {
  for (const d of rule.deny)
    if (values.some((v) => globMatch(d.value, v)))
      return { ok: false, why: `${describeScope(d.from)} denies ${JSON.stringify(d.value)} among ${what}` };
  const allow = rule.allow;
  if (allow && matchesAny(allow.value, ...values) === null)
    return {
      ok: false,
      why: `${describeScope(allow.from)} allows only ${allow.value.map((p) => JSON.stringify(p)).join(', ')} among ${what}`,
    };
  return PASS;
};

const unique = (xs: readonly string[]) => [...new Set(xs)];

/** The decision of one layer on one query. */
const evaluateLayer = (query: PolicyQuery, r: ResolvedPolicy): PolicyDecision => {
  const base = {
    policy_version: r.version,
    max_tokens_ceiling: r.max_tokens?.value ?? null,
    payload_capture: r.payload_capture?.value ?? true,
    rate_limits: {
      requests_per_minute: r.requests_per_minute?.value ?? null,
      tokens_per_minute: r.tokens_per_minute?.value ?? null,
    },
  };
  const deny = (code: PolicyDenial, reason: string): PolicyDecision => ({
    ...base,
    allowed: false,
    code,
    reasons: [reason],
    allowed_candidates: [],
  });

  if (r.routes) {
    const v = listVerdict(r.routes, [query.route], 'routes');
    if (!v.ok) return deny('route_not_allowed', `${query.route} is not allowed: ${v.why}`);
  }
  if (r.max_tokens && query.max_tokens !== null && query.max_tokens > r.max_tokens.value)
    return deny(
      'max_tokens_exceeded',
      `max_tokens ${query.max_tokens} is above the ceiling of ${r.max_tokens.value} set by ${describeScope(r.max_tokens.from)}`,
    );

  const allowed: number[] = [];
  const removed: string[] = [];
  let byProvider = 0;
  query.candidates.forEach((c, i) => {
    const provider = r.providers ? listVerdict(r.providers, [c.provider, c.adapter], 'providers') : PASS;
    if (!provider.ok) {
      byProvider++;
      removed.push(`provider ${c.provider}: ${provider.why}`);
      return;
    }
    const model = r.models ? listVerdict(r.models, [c.model, c.provider_model_id], 'models') : PASS;
    if (!model.ok) {
      removed.push(`model ${c.model}: ${model.why}`);
      return;
    }
    allowed.push(i);
  });
  if (query.candidates.length > 0 && allowed.length === 0)
    return deny(
      byProvider === query.candidates.length ? 'provider_not_allowed' : 'model_not_allowed',
      `no candidate for ${query.model} is allowed: ${unique(removed).join('; ')}`,
    );
  return { ...base, allowed: true, code: 'allowed', reasons: unique(removed), allowed_candidates: allowed };
};

const stricter = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.min(a, b);

/**
 * The decision on one query: each layer decides on its own (operator first) and the stricter
 * answer holds: a denial by either, the candidates both allow, the lower ceiling and limits, and
 * capture only where both permit it.
 */
export const evaluatePolicy = (query: PolicyQuery, layers: readonly ResolvedPolicy[]): PolicyDecision => {
  const decisions = layers.map((r) => evaluateLayer(query, r));
  const version = layers
    .map((r) => r.version)
    .filter(Boolean)
    .join(',');
  const combined: PolicyDecision = {
    allowed: true,
    code: 'allowed',
    reasons: [],
    policy_version: version,
    allowed_candidates: query.candidates.map((_, i) => i),
    max_tokens_ceiling: null,
    payload_capture: true,
    rate_limits: { requests_per_minute: null, tokens_per_minute: null },
  };
  for (const d of decisions) {
    combined.max_tokens_ceiling = stricter(combined.max_tokens_ceiling, d.max_tokens_ceiling);
    combined.payload_capture &&= d.payload_capture;
    combined.rate_limits = {
      requests_per_minute: stricter(
        combined.rate_limits.requests_per_minute,
        d.rate_limits.requests_per_minute,
      ),
      tokens_per_minute: stricter(combined.rate_limits.tokens_per_minute, d.rate_limits.tokens_per_minute),
    };
  }
  const denied = decisions.find((d) => !d.allowed);
  if (denied)
    return {
      ...combined,
      allowed: false,
      code: denied.code,
      reasons: denied.reasons,
      allowed_candidates: [],
    };
  combined.reasons = unique(decisions.flatMap((d) => d.reasons));
  combined.allowed_candidates = combined.allowed_candidates.filter((i) =>
    decisions.every((d) => d.allowed_candidates.includes(i)),
  );
  if (query.candidates.length > 0 && combined.allowed_candidates.length === 0)
    return {
      ...combined,
      allowed: false,
      code: 'model_not_allowed',
      reasons: [
        `no candidate for ${query.model} is allowed by both the operator and the workspace policies: ${combined.reasons.join('; ')}`,
      ],
    };
  return combined;
};
