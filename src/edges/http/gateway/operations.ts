import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { estimatedUsage } from '../../../gateway/metering.js';
import type { AttemptCall } from '../../../gateway/pipeline.js';
import { primaryDialect } from '../../../gateway/render/dialect.js';
import { type RouteVerdict, refuseHostedTools } from '../../../gateway/route-rules.js';

import { ERROR_CATALOGUE, ServiceError } from '../../../lib/errors.js';
import { eventFrame } from '../../../lib/sse.js';
import type { CanonicalRequest, Usage } from '../../../providers/contract.js';
import type { Capability, RegistryEndpoint } from '../../../providers/endpoint.js';
import {
  type JsonOperation,
  type JsonReply,
  type RelayedEvent,
  unsupportedOperation,
} from '../../../providers/provider.js';
import { EventStreamWriter } from './event-stream.js';
import { embeddingsPromptTokens, parseEmbeddingsBody, parseResponsesBody } from './json-bodies.js';
import { receivedBytes } from './received-bytes.js';
import {
  admit,
  dispatch,
  type GatewayDeps,
  holdEscrow,
  openEventStream,
  openRequest,
  priceServed,
  relayCommitted,
  sendJson,
} from './serve.js';

/** How a primary-dialect JSON operation differs from the next one; the request path is shared. */
interface JsonRoute {
  operation: JsonOperation;
  /** SPEC 4.1 rule 3: candidates advertising none of these are filtered out before dispatch. */
  capability: Capability | readonly Capability[];
  /** Named in errors: "no candidate for X supports <describe>". */
  describe: string;
  /** Decided once for the whole route before escrow and any attempt (SPEC 4.1 rule 8). */
  rules?: (request: CanonicalRequest, candidates: readonly RegistryEndpoint[]) => ServiceError | null;
}

const ROUTES: Record<JsonOperation, JsonRoute> = {
  embeddings: { operation: 'embeddings', capability: 'embeddings', describe: 'embeddings' },
  // Not gated on the responses flag alone (SPEC 4.1 rule 3 names embeddings, not responses): a
  // chat model may take a responses call, as deployment hosts do although /v1/models reports
  // responses false for them (SPEC 4.7), and a provider that cannot answers with the structured
  // unsupported error, leaving the next candidate free to serve.
  responses: {
    operation: 'responses',
    capability: ['responses', 'chat'],
    describe: 'responses',
    rules: refuseHostedTools,
  },
};

/** An upstream event written back as it came (a multi-line payload keeps one data line per line). */
export const frameOf = (e: RelayedEvent): string =>
  `${e.event === undefined ? '' : `event: ${e.event}\n`}${e.data
    .split('\n')
    .map((line) => `data: ${line}\n`)
    .join('')}\n`;

/** The Responses stream's own error event, for a stream that failed after it began (SPEC 7.6 rule 1). */
const errorFrame = (err: ServiceError, requestId: string): string =>
  eventFrame(
    'error',
    JSON.stringify({
      type: 'error',
      code: err.displayCode ?? err.code,
      message: err.message,
      param: null,
      error_type: ERROR_CATALOGUE[err.code].primaryType,
      request_id: requestId,
    }),
  );

/** Ends a failed stream after its error event (SPEC 4.1 rule 5, 7.6 rule 1), as chat's does. */
const DONE_FRAME = 'data: [DONE]\n\n';

/**
 * One JSON operation on the one request path: open, admit (rate limit, selection with capability
 * gating), escrow, the attempt pipeline with retries and fallback, then the buffered body or the
 * upstream's SSE events relayed as they came, priced under the operation's meters.
 */
export const serveJsonOperation = async (
  request: FastifyRequest,
  reply: FastifyReply,
  deps: GatewayDeps,
  canonical: CanonicalRequest,
  route: JsonRoute,
): Promise<FastifyReply> => {
  const requestBytes = receivedBytes(request);
  const scope = openRequest(request, reply, deps, { canonical, dialect: primaryDialect, requestBytes });
  const { completed, requestId } = scope;
  const admitted = admit(scope, reply, deps, {
    model: canonical.model,
    capability: route.capability,
    operation: route.describe,
    route: (candidates): RouteVerdict => {
      const refused = route.rules?.(canonical, candidates);
      return refused ? { ok: false, error: refused } : { ok: true, candidates: [...candidates] };
    },
  });
  if (!admitted.ok) return admitted.reply;

  // Embeddings produce no output tokens, so their hold is the input alone, estimated from the input.
  const embeddingsPrompt = route.operation === 'embeddings' ? embeddingsPromptTokens(canonical.raw.input) : 0;
  const refused = await holdEscrow(scope, deps, admitted.candidates, (e) =>
    route.operation === 'embeddings'
      ? { operation: 'embeddings', prompt_tokens: embeddingsPrompt, max_output_tokens: 0 }
      : {
          operation: route.operation,
          prompt_tokens: Math.max(1, Math.ceil(requestBytes / 4)),
          max_output_tokens: canonical.maxTokens ?? e.max_output_tokens ?? 4_096,
        },
  );
  if (refused) return refused.refused;

  const call: AttemptCall<JsonReply, RelayedEvent> = (adapter, target) => {
    const serve = adapter[route.operation];
    return serve
      ? serve.call(adapter, canonical, target)
      : Promise.resolve({ ok: false, failure: unsupportedOperation(adapter.id, route.describe) });
  };
  const dispatched = await dispatch(scope, reply, deps, admitted.candidates, {
    pricing: route.operation,
    call,
  });
  if (!dispatched.ok) return dispatched.reply;
  const { result, abort, release } = dispatched;
  const price = (usage: Usage | null, serviceTier: unknown, text: string) => {
    completed.usageEstimated = usage === null;
    priceServed(
      scope,
      result.endpoint,
      route.operation,
      usage ?? estimatedUsage(requestBytes, text),
      serviceTier,
    );
  };

  if (result.reply) {
    release();
    price(result.reply.usage, result.reply.serviceTier, '');
    return sendJson(scope, reply, JSON.stringify(result.reply.body));
  }

  // The first event arrived: this candidate is committed, later failures end the stream in band.
  const res = openEventStream(reply, requestId);
  const traced: string[] | null = completed.tracing.full ? [] : null;
  const stream = new EventStreamWriter(res, traced);
  let usage: Usage | null = null;
  let serviceTier: unknown;
  // What was generated, for pricing a stream that ended without its completed event.
  let text = '';
  let streamError: ServiceError | undefined;
  const relay = async (e: RelayedEvent) => {
    if (completed.ttfbMs === null) completed.ttfbMs = Date.now() - scope.startedAt.getTime();
    if (e.usage) usage = e.usage;
    if (e.serviceTier !== undefined) serviceTier = e.serviceTier;
    if (e.text) text += e.text;
    // The upstream's own terminal failure reaches the client as sent; the request is a failed stream.
    if (e.failure) streamError = new ServiceError('upstream_stream_error', e.failure);
    await stream.write(frameOf(e));
  };
  const failed = await relayCommitted(result, res, abort, relay, release);
  if (failed) streamError = failed;
  stream.end(failed ? [errorFrame(failed, requestId), DONE_FRAME] : []);
  price(usage, serviceTier, text);
  const disconnected = abort.signal.aborted || (res.destroyed && !res.writableFinished);
  scope.finish(disconnected ? 499 : 200, streamError, traced ? Buffer.from(traced.join('')) : null);
  return reply;
};

/** POST /v1/embeddings and POST /v1/responses (SPEC 4.1; issues 8, 9). */
export const registerJsonOperationRoutes = (v1: FastifyInstance, deps: GatewayDeps): void => {
  v1.post('/embeddings', { bodyLimit: deps.bodyLimit }, async (request, reply) =>
    serveJsonOperation(request, reply, deps, parseEmbeddingsBody(request.body), ROUTES.embeddings),
  );
  v1.post('/responses', { bodyLimit: deps.bodyLimit }, async (request, reply) =>
    serveJsonOperation(request, reply, deps, parseResponsesBody(request.body), ROUTES.responses),
  );
};
