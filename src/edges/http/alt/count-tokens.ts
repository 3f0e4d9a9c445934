import type { FastifyReply, FastifyRequest } from 'fastify';
import { altDialect } from '../../../gateway/render/alt-dialect.js';
import { failureError } from '../../../gateway/render/failures.js';
import { routeRules } from '../../../gateway/route-rules.js';
import type { CanonicalRequest } from '../../../providers/contract.js';
import { admit, type GatewayDeps, openRequest } from '../gateway/serve.js';

/** SPEC 8 token estimate: ceil(serialized internal body bytes / 4), max_tokens dropped. */
export const estimateTokens = (canonical: CanonicalRequest): number => {
  const { max_tokens: _dropped, ...body } = canonical.raw;
  return Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4);
};

/**
 * POST /alt/v1/messages/count_tokens (SPEC 4.2 rule 9) on the one request path's opening and
 * admission: a route whose first candidate counts tokens itself (messages-style) is proxied with the
 * tenant's own credentials; any other route gets the estimate. No escrow, budget or cost lines:
 * the request is recorded for analytics only.
 */
export const serveCountTokens = async (
  request: FastifyRequest,
  reply: FastifyReply,
  deps: GatewayDeps,
  canonical: CanonicalRequest,
  requestBytes: number,
): Promise<FastifyReply> => {
  const scope = openRequest(request, reply, deps, { canonical, dialect: altDialect, requestBytes });
  const admitted = admit(scope, reply, deps, {
    model: canonical.model,
    capability: 'chat',
    operation: 'token counting',
    route: (candidates) => routeRules(canonical, candidates),
    free: true,
  });
  if (!admitted.ok) return admitted.reply;
  const { completed } = scope;
  const endpoint = admitted.candidates[0]!;
  const adapter = deps.adapters.get(endpoint.adapter);
  const credentials = scope.tenancy.credentials(scope.key.projectId, endpoint.adapter);
  const answer = (inputTokens: number) => {
    completed.ttfbMs = Date.now() - scope.startedAt.getTime();
    const text = JSON.stringify({ input_tokens: inputTokens });
    scope.finish(200, undefined, completed.tracing.full ? Buffer.from(text) : null);
    return reply.code(200).type('application/json').send(text);
  };
  if (!adapter?.countTokens || !credentials) return answer(estimateTokens(canonical));

  const abort = new AbortController();
  const started = Date.now();
  const counted = await adapter.countTokens(canonical, {
    endpoint,
    credentials,
    requestId: scope.requestId,
    signal: abort.signal,
    timeoutMs: deps.budget.attemptTimeoutMs,
    limits: deps.limits,
  });
  const failure = counted.ok ? null : counted.failure;
  completed.attempts = [
    {
      source: `${endpoint.lane}/${endpoint.model}`,
      kind: failure?.kind ?? null,
      status_code: failure?.status_code ?? null,
      message: failure?.message ?? null,
      provider: endpoint.lane,
      model: endpoint.model,
      provider_model_id: endpoint.provider_model_id,
      outcome: failure ? 'failure' : 'success',
      latency_ms: Date.now() - started,
    },
  ];
  deps.onAttempt(endpoint.lane, failure ? failure.kind : 'success');
  completed.provider = endpoint.lane;
  completed.modelServed = endpoint.model;
  completed.providerModelId = endpoint.provider_model_id;
  completed.funding = credentials.funding;
  if (!counted.ok) return scope.fail(failureError(completed.attempts, [counted.failure]));
  return answer(counted.inputTokens);
};
