import type { CanonicalRequest } from '../providers/contract.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { type AttemptCall, type PipelineBudget, runAttempts } from './pipeline.js';
import { failureError } from './render/failures.js';
import type { GatewayAnswer, RequestScope } from './scope.js';

/** SPEC 8 token estimate: ceil(serialized internal body bytes / 4), max_tokens dropped. */
export const estimateTokens = (canonical: CanonicalRequest): number => {
  const { max_tokens: _dropped, ...body } = canonical.raw;
  return Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4);
};

/** The provider's own count, as an attempt's reply. */
const countCall =
  (canonical: CanonicalRequest): AttemptCall<number, never> =>
  async (adapter, target) => {
    const counted = await adapter.countTokens!(canonical, target);
    return counted.ok ? { ok: true, reply: counted.inputTokens } : counted;
  };

const answerCount = (scope: RequestScope, inputTokens: number): GatewayAnswer =>
  scope.answer(JSON.stringify({ input_tokens: inputTokens }));

/**
 * Token counting (SPEC 4.2 rule 9), admitted like any request: when the route's first candidate
 * counts tokens itself (messages-style), one attempt through the attempt pipeline asks it with the
 * tenant's own connection, never the operator's platform key (SPEC 5: messages-style upstreams are
 * called with tenant BYOK credentials; counting spends no budget, so nothing else may pay for it).
 * A tenant without one, and any other route, gets the estimate, with no attempt. Zero-rated: no escrow, no cost lines; the request
 * is recorded for analytics only.
 */
export const countTokens = async (
  scope: RequestScope,
  candidates: readonly RegistryEndpoint[],
): Promise<GatewayAnswer> => {
  const { deps, input, completed } = scope;
  const { canonical } = input;
  const endpoint = candidates[0]!;
  const adapter = deps.adapters.get(endpoint.adapter);
  // Only the tenant's own connection may be asked; a project without one (wallet-funded, or with
  // nothing) gets the estimate, as a route that cannot proxy does, and its clients keep working.
  const credentials = scope.tenancy.credentials(input.key.projectId, endpoint);
  if (!adapter?.countTokens || credentials?.funding !== 'byok')
    return answerCount(scope, estimateTokens(canonical));

  // One attempt on that endpoint, no retry and no fallback: its timeout is the whole budget.
  const budget: PipelineBudget = {
    retries: 0,
    deadlineMs: Number.POSITIVE_INFINITY,
    attemptTimeoutMs: deps.budget.attemptTimeoutMs,
    backoffMs: 0,
  };
  const result = await runAttempts<number, never>(
    canonical,
    [endpoint],
    {
      adapters: deps.adapters,
      credentials: () => credentials,
      limits: deps.limits,
      onAttempt: deps.onAttempt,
    },
    { requestId: input.requestId, signal: new AbortController().signal, budget, call: countCall(canonical) },
  );
  completed.attempts = result.attempts;
  completed.provider = endpoint.lane;
  completed.modelServed = endpoint.model;
  completed.providerModelId = endpoint.provider_model_id;
  completed.funding = credentials.funding;
  if (!result.ok) return scope.fail(failureError(result.attempts, result.failures));
  return answerCount(scope, result.reply!);
};
