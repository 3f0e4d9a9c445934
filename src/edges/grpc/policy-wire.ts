import { ServiceError } from '../../lib/errors.js';
import type { PolicyDecision, PolicyDenial, PolicyQuery } from '../../policy/evaluate.js';
import type { PolicyDecision__Output as WireDecision } from './generated/svc/policy/v1/PolicyDecision.js';
import type { PolicyQuery__Output as WireQuery } from './generated/svc/policy/v1/PolicyQuery.js';
import type { RateLimits__Output as WireRateLimits } from './generated/svc/policy/v1/RateLimits.js';

/**
 * PolicyQuery and PolicyDecision (proto/svc/policy/v1/policy.proto) between their wire form, as
 * @grpc/proto-loader hands it over (uint64 as decimal strings, proto3 `optional` fields named in
 * their synthetic oneof `_<field>`), and the evaluator's types. Both sides of the service use it. The
 * wire types are generated from the proto (generated/), so a field it renames fails to compile here.
 */

const MAX_ID = 256;
const MAX_CANDIDATES = 1_000;

const text = <R>(r: R, field: keyof R & string, max = MAX_ID): string => {
  const v: unknown = r[field];
  if (typeof v !== 'string' || v.length > max)
    throw new ServiceError('bad_request', `${field} must be a string of at most ${max} characters`);
  return v;
};

const required = <R>(r: R, field: keyof R & string): string => {
  const v = text(r, field);
  if (!v) throw new ServiceError('bad_request', `${field} is required`);
  return v;
};

/** A proto3 `optional` uint64: null when unset. */
const optionalCount = <F extends string>(
  r: NoInfer<{ [K in F | `_${F}`]?: unknown }>,
  field: F,
): number | null => {
  if (r[`_${field}`] !== field) return null;
  const n = Number(r[field]);
  if (!Number.isSafeInteger(n) || n < 0) throw new ServiceError('bad_request', `${field} is out of range`);
  return n;
};

/** Sets a proto3 `optional` uint64 of a T when there is a value; field names are T's, so checked. */
const setCount = <T>(field: keyof T & string, v: number | null): Partial<T> =>
  (v === null ? {} : { [field]: String(v) }) as Partial<T>;

export const queryFromWire = (r: WireQuery): PolicyQuery => {
  const candidates = Array.isArray(r.candidates) ? r.candidates : [];
  if (candidates.length > MAX_CANDIDATES)
    throw new ServiceError('bad_request', `at most ${MAX_CANDIDATES} candidates`);
  return {
    org_id: required(r, 'org_id'),
    project_id: required(r, 'project_id'),
    api_key_id: required(r, 'api_key_id'),
    route: required(r, 'route'),
    model: text(r, 'model', 4_096),
    max_tokens: optionalCount(r, 'max_tokens'),
    candidates: candidates.map((c) => ({
      provider: text(c, 'provider'),
      adapter: text(c, 'adapter'),
      model: text(c, 'model', 1_024),
      provider_model_id: text(c, 'provider_model_id', 2_048),
    })),
  };
};

export const queryToWire = (q: PolicyQuery): WireQuery => ({
  org_id: q.org_id,
  project_id: q.project_id,
  api_key_id: q.api_key_id,
  route: q.route,
  model: q.model,
  ...setCount<WireQuery>('max_tokens', q.max_tokens),
  candidates: q.candidates.map((c) => ({ ...c })),
});

export const decisionToWire = (d: PolicyDecision): WireDecision => ({
  allowed: d.allowed,
  code: d.code,
  reasons: d.reasons,
  policy_version: d.policy_version,
  allowed_candidates: d.allowed_candidates,
  ...setCount<WireDecision>('max_tokens_ceiling', d.max_tokens_ceiling),
  payload_capture: d.payload_capture,
  rate_limits: {
    ...setCount<WireRateLimits>('requests_per_minute', d.rate_limits.requests_per_minute),
    ...setCount<WireRateLimits>('tokens_per_minute', d.rate_limits.tokens_per_minute),
  },
});

const CODES: ReadonlySet<string> = new Set<PolicyDecision['code']>([
  'allowed',
  'route_not_allowed',
  'max_tokens_exceeded',
  'provider_not_allowed',
  'model_not_allowed',
]);

/** A decision from the policy service; one that does not make sense is an error, never an allow. */
export const decisionFromWire = (r: WireDecision, candidates: number): PolicyDecision => {
  const code = String(r.code);
  if (!CODES.has(code))
    throw new Error(`the policy service answered an unknown code ${JSON.stringify(code)}`);
  const allowed = r.allowed === true;
  if (allowed !== (code === 'allowed'))
    throw new Error('the policy service answered a contradictory decision');
  const indexes = (Array.isArray(r.allowed_candidates) ? r.allowed_candidates : []).map(Number);
  if (indexes.some((i) => !Number.isInteger(i) || i < 0 || i >= candidates))
    throw new Error('the policy service answered a candidate index out of range');
  if (allowed && candidates > 0 && indexes.length === 0)
    throw new Error('the policy service allowed a request without any of its candidates');
  const limits: WireRateLimits = r.rate_limits ?? {};
  return {
    allowed,
    code: code as 'allowed' | PolicyDenial,
    reasons: (Array.isArray(r.reasons) ? r.reasons : []).map(String),
    policy_version: String(r.policy_version ?? ''),
    allowed_candidates: indexes,
    max_tokens_ceiling: optionalCount(r, 'max_tokens_ceiling'),
    payload_capture: r.payload_capture === true,
    rate_limits: {
      requests_per_minute: optionalCount(limits, 'requests_per_minute'),
      tokens_per_minute: optionalCount(limits, 'tokens_per_minute'),
    },
  };
};
