import { ServiceError } from '../lib/errors.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { answerChat, ChatStream } from './chat-reply.js';
import { countTokens } from './count-tokens.js';
import { hostFileSearch, withFileSearchCall } from './file-search.js';
import { holdEscrow } from './hold.js';
import { answerJsonReply, JsonEventStream, jsonCall, PRICED_AS } from './json-reply.js';
import { admitByKeyLimits, admitByPolicy } from './policy.js';
import { relayCommitted } from './relay.js';
import { ROUTE_POLICY, type RouteVerdict } from './route-rules.js';
import { type GatewayAnswer, type GatewayDeps, type GatewayRequest, RequestScope } from './scope.js';
import { keepCheapestAuto, selectCandidates } from './selector.js';

export type { ClientPort, FrameSink, GatewayAnswer, GatewayDeps, GatewayRequest } from './scope.js';

/** An organization without a provider disallow list disallows nothing. */
const NO_DISALLOW: ReadonlySet<string> = new Set();

/**
 * One request of any gateway operation, from the canonical request an edge parsed to its record:
 * chat in either dialect (buffered or streamed), embeddings, responses and token counting.
 *
 * 1. Admission: selection of the candidates with capability gating and the disallow list (SPEC
 *    4.1 rules 1 and 3), the policy decision on them (SPEC 1.9), the API key's rate limit (SPEC
 *    7.4), its monthly spend caps and its policy rate limits, then the route rules decided once for
 *    every candidate (SPEC 4.1 rules 6 and 8, 4.2 rule 8).
 * 2. Escrow: wallet-funded candidates hold their largest estimate (SPEC 1.4, 8).
 * 3. Dispatch through the attempt pipeline: retries, then fallback (SPEC 1.2).
 * 4. The reply rendered, or the stream relayed, in the caller's dialect (SPEC 4.1 rule 5, 4.2 rule 5).
 * 5. Metering and the request.completed record, handed off after the reply (SPEC 1.3, 2.5).
 *
 * Token counting is admitted the same way, spends nothing and holds nothing (SPEC 4.2 rule 9).
 * What comes back is what the edge writes; a stream was written through the client's port.
 */
export async function serveRequest(deps: GatewayDeps, input: GatewayRequest): Promise<GatewayAnswer> {
  const scope = new RequestScope(deps, input);
  const { canonical, key } = input;
  const route = ROUTE_POLICY[canonical.route];

  const selected = selectCandidates(scope.registry, canonical.model, {
    capability: route.capability,
    disallow: scope.tenancy.org(key.orgId)?.disallow ?? NO_DISALLOW,
    operation: route.describe,
    hasConnection: (endpoint, name) => scope.tenancy.hasConnection(key.projectId, endpoint, name),
    atMs: scope.startedAt.getTime(),
  });
  // The policy decides before any other refusal, so every record it governs (payload capture
  // included) follows it; a route or ceiling denial wins over a selection error.
  if (!selected.ok) {
    const denied = await admitByPolicy(scope, []);
    return scope.fail(!denied.ok && denied.error.code === 'policy_denied' ? denied.error : selected.error);
  }
  const permitted = await admitByPolicy(scope, selected.candidates);
  if (!permitted.ok) return scope.fail(permitted.error);
  const wait = deps.rateLimiter.take(key.apiKeyId);
  if (wait !== null)
    return scope.fail(
      new ServiceError('rate_limit_error', `rate limit exceeded for this API key; retry in ${wait} s`),
      wait * 1_000,
    );
  const capped = route.zeroRated ? null : deps.spendCaps?.refusal(key);
  if (capped) return scope.fail(capped);
  const limited = await admitByKeyLimits(scope, permitted.decision);
  if (limited) return limited;
  const candidates = keepCheapestAuto(permitted.candidates, selected.auto);
  const admitted: RouteVerdict = route.rules ? route.rules(canonical, candidates) : { ok: true, candidates };
  if (!admitted.ok) return scope.fail(admitted.error);
  if (canonical.operation === 'count_tokens') return countTokens(scope, admitted.candidates);
  // Hosted file_search retrieves before anything is held: a store the key cannot see is a 404.
  const fileSearch = await hostFileSearch(scope);
  if (!fileSearch.ok) return scope.fail(fileSearch.error);

  // Priced at zero: nothing to hold (and nothing to settle, SPEC 4.1 moderations).
  const held = route.zeroRated ? admitted : await holdEscrow(scope, admitted.candidates);
  if (!held.ok) return scope.fail(held.error);
  try {
    return await dispatch(scope, held.candidates, fileSearch.item);
  } catch (err) {
    scope.finishBroken();
    throw err;
  }
}

/** Dispatch, then the reply rendered or the stream relayed, metered and recorded. */
async function dispatch(
  scope: RequestScope,
  candidates: readonly RegistryEndpoint[],
  fileSearchItem: Record<string, unknown> | null,
): Promise<GatewayAnswer> {
  const { canonical } = scope.input;
  switch (canonical.operation) {
    case 'chat': {
      const result = await scope.dispatch(candidates, 'chat');
      if (!result.ok) return scope.failed(result);
      if (result.reply) return answerChat(scope, result.endpoint, result.reply);
      const stream = new ChatStream(scope, result.endpoint);
      return stream.end(await relayCommitted(scope, result, stream.sink, stream.relay));
    }
    case 'embeddings':
    case 'moderations':
    case 'images':
    case 'responses': {
      const operation = canonical.operation;
      const call = jsonCall(canonical, operation);
      const result = await scope.dispatch(
        candidates,
        PRICED_AS[operation],
        fileSearchItem ? withFileSearchCall(call, fileSearchItem) : call,
      );
      if (!result.ok) return scope.failed(result);
      if (result.reply) return answerJsonReply(scope, result.endpoint, operation, result.reply);
      const stream = new JsonEventStream(scope, result.endpoint, operation);
      return stream.end(await relayCommitted(scope, result, stream.sink, stream.relay));
    }
    default:
      // No edge parses these into a request yet (SPEC 4.1: image edits and variations answer 501).
      throw new Error(`the request path serves no ${canonical.operation} requests`);
  }
}
