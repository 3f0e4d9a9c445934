import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EscrowPort } from '../../../commands/wallet/ports.js';
import type { ApiKeyIdentity } from '../../../gateway/auth/api-key-cache.js';
import type { CompletedRequest, CompletionSink } from '../../../gateway/completed.js';
import { estimatedUsage, observedUsage, pricingUsageOf } from '../../../gateway/metering.js';
import {
  type AttemptCall,
  type PipelineBudget,
  type PipelineResult,
  runAttempts,
} from '../../../gateway/pipeline.js';
import type { RateLimiter } from '../../../gateway/rate-limit.js';
import type { RegistrySnapshot } from '../../../gateway/registry/snapshot.js';
import type { Dialect } from '../../../gateway/render/dialect.js';
import { failureError } from '../../../gateway/render/failures.js';
import type { RouteVerdict } from '../../../gateway/route-rules.js';
import { selectCandidates } from '../../../gateway/selector.js';
import type { TenancySnapshot } from '../../../gateway/tenancy.js';
import { ERROR_CATALOGUE, ServiceError } from '../../../lib/errors.js';
import { newId } from '../../../lib/ids.js';
import { formatUsd, maxUsd, type Usd } from '../../../lib/money.js';
import {
  type EscrowShape,
  escrowEstimate,
  type Operation as PricingOperation,
  priceUsage,
} from '../../../pricing/index.js';
import type { CanonicalChunk, CanonicalReply, CanonicalRequest, Usage } from '../../../providers/contract.js';
import type { Adapter, Capability, RegistryEndpoint } from '../../../providers/endpoint.js';
import type { AttemptTarget, ProviderAdapter } from '../../../providers/provider.js';
import { StreamFailure } from '../../../providers/provider.js';
import { EventStreamWriter } from './event-stream.js';

export interface GatewayDeps {
  registry: () => RegistrySnapshot;
  tenancy: () => TenancySnapshot;
  adapters: ReadonlyMap<Adapter, ProviderAdapter>;
  budget: PipelineBudget;
  limits: AttemptTarget['limits'];
  rateLimiter: RateLimiter;
  onAttempt: (provider: string, outcome: string) => void;
  onCompleted: CompletionSink;
  observe: (
    route: string,
    status: number,
    stream: boolean,
    seconds: number,
    ttfbSeconds: number | null,
  ) => void;
  bodyLimit: number;
  escrow: EscrowPort;
  /** Monthly spend caps (gateway/spend-caps.ts): an in-memory verdict, refreshed off the request path. */
  spendCaps?: { refusal(key: ApiKeyIdentity): ServiceError | null };
}

export const REQUEST_ID_HEADER = 'x-svc-request-id';

const countTools = (calls: { function?: { name?: string } }[] | undefined, into: Record<string, number>) => {
  for (const c of calls ?? []) {
    const name = c.function?.name;
    if (name) into[name] = (into[name] ?? 0) + 1;
  }
};

const tracingOf = (
  request: FastifyRequest,
  key: ApiKeyIdentity,
  tenancy: TenancySnapshot,
): CompletedRequest['tracing'] => {
  if (request.headers['svc-enable-tracing'] === '1') return { full: true, source: 'header' };
  if (key.tracing) return { full: true, source: 'api_key' };
  if (tenancy.projectTracing(key.projectId)) return { full: true, source: 'project' };
  if (tenancy.org(key.orgId)?.tracing) return { full: true, source: 'org' };
  return { full: false, source: 'none' };
};

/** Rules decided once for the whole route, before escrow and before any attempt (SPEC 4.1 rules 6, 8). */
export type RouteRule = (candidates: readonly RegistryEndpoint[]) => RouteVerdict;

/** One admitted request: its id, its record, and how it ends. */
export interface RequestScope {
  requestId: string;
  startedAt: Date;
  key: ApiKeyIdentity;
  tenancy: TenancySnapshot;
  registry: RegistrySnapshot;
  completed: CompletedRequest;
  /** Records the outcome and hands request.completed off after the reply. */
  finish(status: number, error?: ServiceError, responseBody?: Buffer | null): void;
  /** Finishes with an error rendered in the edge's dialect. */
  fail(error: ServiceError): FastifyReply;
}

/**
 * The opening of every request of every edge: the request id (from here on every answer carries it,
 * SPEC 7.4), tracing, the request.completed record and how the request finishes.
 */
export const openRequest = (
  request: FastifyRequest,
  reply: FastifyReply,
  deps: GatewayDeps,
  options: { canonical: CanonicalRequest; dialect: Dialect; requestBytes: number },
): RequestScope => {
  const { canonical, dialect } = options;
  const startedAt = new Date();
  const key = request.apiKey!;
  // The server already named the request (genReqId): reuse that id rather than draw a second one.
  const requestId = request.id.startsWith('req_') ? request.id : newId('req');
  reply.header(REQUEST_ID_HEADER, requestId);
  const tenancy = deps.tenancy();
  const tracing = tracingOf(request, key, tenancy);
  const sessionHeader = request.headers['x-svc-session-id'];
  const completed: CompletedRequest = {
    requestId,
    key,
    request: canonical,
    requestBytes: options.requestBytes,
    status: 'error',
    httpStatus: 500,
    errorCode: null,
    errorType: null,
    provider: null,
    modelServed: null,
    providerModelId: null,
    funding: null,
    startedAt,
    finishedAt: startedAt,
    ttfbMs: null,
    attempts: [],
    usage: null,
    usageEstimated: false,
    pricing: null,
    tracing,
    sessionId: typeof sessionHeader === 'string' ? sessionHeader : null,
    toolSummary: {},
    bodies: null,
  };
  const finish = (status: number, error?: ServiceError, responseBody?: Buffer | null) => {
    completed.finishedAt = new Date();
    completed.httpStatus = status;
    completed.status = error ? 'error' : 'success';
    if (error) {
      completed.errorCode = error.displayCode ?? error.code;
      completed.errorType = ERROR_CATALOGUE[error.code].primaryType;
    }
    // The body the caller sent: the alternate edge's inbound JSON, not its translation.
    if (tracing.full)
      completed.bodies = {
        request: Buffer.from(JSON.stringify(canonical.preserved?.raw ?? canonical.raw)),
        response: responseBody ?? null,
      };
    const seconds = (completed.finishedAt.getTime() - startedAt.getTime()) / 1_000;
    deps.observe(
      canonical.route,
      status,
      canonical.stream,
      seconds,
      completed.ttfbMs === null ? null : completed.ttfbMs / 1_000,
    );
    // Off the critical path: the reply is already on its way.
    setImmediate(() => deps.onCompleted(completed));
  };
  const fail = (error: ServiceError) => {
    const status = dialect.status?.(error) ?? error.status;
    finish(status, error);
    return reply.code(status).send(dialect.error(error, requestId));
  };
  return { requestId, startedAt, key, tenancy, registry: deps.registry(), completed, finish, fail };
};

/** Rate limit, spend caps, selection with capability gating, then the route-level rules. */
export const admit = (
  scope: RequestScope,
  reply: FastifyReply,
  deps: GatewayDeps,
  options: {
    model: string;
    /** Any of these qualifies a candidate (SPEC 4.1 rule 3). */
    capability: Capability | readonly Capability[];
    operation: string;
    route?: RouteRule;
    /** A zero-rated operation (token counting) spends nothing, so a cap does not refuse it. */
    free?: boolean;
  },
): { ok: true; candidates: RegistryEndpoint[] } | { ok: false; reply: FastifyReply } => {
  const wait = deps.rateLimiter.take(scope.key.apiKeyId);
  if (wait !== null) {
    reply.header('retry-after', String(wait));
    return {
      ok: false,
      reply: scope.fail(
        new ServiceError('rate_limit_error', `rate limit exceeded for this API key; retry in ${wait} s`),
      ),
    };
  }
  const capped = options.free ? null : deps.spendCaps?.refusal(scope.key);
  if (capped) return { ok: false, reply: scope.fail(capped) };
  const selected = selectCandidates(scope.registry, options.model, {
    capability: options.capability,
    disallow: scope.tenancy.org(scope.key.orgId)?.disallow ?? new Set(),
    operation: options.operation,
    atMs: scope.startedAt.getTime(),
  });
  if (!selected.ok) return { ok: false, reply: scope.fail(selected.error) };
  const verdict = options.route ? options.route(selected.candidates) : selected;
  if (!verdict.ok) return { ok: false, reply: scope.fail(verdict.error) };
  return { ok: true, candidates: verdict.candidates };
};

/**
 * Wallet-funded candidates hold the largest of their estimates before any upstream call. Answers
 * the request itself (402, or 503 when funds cannot be checked) and returns that reply, wrapped,
 * when the hold is refused; null when the request may go on. (A FastifyReply is thenable: returned
 * bare from an async function it would be awaited into undefined and the request would go on.)
 */
export const holdEscrow = async (
  scope: RequestScope,
  deps: GatewayDeps,
  candidates: readonly RegistryEndpoint[],
  shape: (endpoint: RegistryEndpoint) => EscrowShape,
): Promise<{ refused: FastifyReply } | null> => {
  const { key, tenancy, registry, startedAt, requestId, fail } = scope;
  let hold: Usd | null = null;
  for (const e of candidates) {
    if (tenancy.credentials(key.projectId, e.adapter)?.funding !== 'wallet') continue;
    const estimate = escrowEstimate(registry.cardAt(e, startedAt.getTime()), shape(e));
    if (estimate.status === 'reserved')
      hold = hold === null ? estimate.amount : maxUsd(hold, estimate.amount);
  }
  if (hold === null) return null;
  let held: Awaited<ReturnType<EscrowPort['hold']>>;
  try {
    held = await deps.escrow.hold({ requestId, workspaceId: key.workspaceId, amountUsd: formatUsd(hold) });
  } catch {
    // Funds cannot be checked: fail closed, in the caller's envelope, and still record the request.
    return {
      refused: fail(
        new ServiceError('service_unavailable', 'wallet funds could not be checked; retry shortly'),
      ),
    };
  }
  if (held.ok) return null;
  return {
    refused: fail(
      new ServiceError(
        'insufficient_funds',
        held.reason === 'no_wallet'
          ? 'this workspace has no wallet funding platform-key traffic'
          : `insufficient wallet funds: this request holds up to ${formatUsd(hold)} USD${held.availableUsd ? `, ${held.availableUsd} USD available` : ''}`,
      ),
    ),
  };
};

/** Prices a served request's usage on the endpoint's rate card at the request's start. */
export const priceServed = (
  scope: RequestScope,
  endpoint: RegistryEndpoint,
  operation: PricingOperation,
  usage: Usage,
  serviceTier: unknown,
): void => {
  const { completed } = scope;
  completed.usage = usage;
  completed.pricing = priceUsage(
    scope.registry.cardAt(endpoint, scope.startedAt.getTime()),
    pricingUsageOf(operation, usage, completed.request, serviceTier),
  );
};

export type Dispatched<R, C> =
  | { ok: false; reply: FastifyReply }
  | {
      ok: true;
      result: Extract<PipelineResult<R, C>, { ok: true }>;
      abort: AbortController;
      /** Stops treating a closed client connection as a cancellation. */
      release: () => void;
    };

/**
 * The attempt pipeline for an admitted request. A failed request is answered here in the caller's
 * envelope (or recorded as 499 when the client left); usage an upstream already served before the
 * failure is priced all the same (SPEC 4.1 rule 4). A served one has its endpoint recorded.
 */
export const dispatch = async <R = CanonicalReply, C = CanonicalChunk>(
  scope: RequestScope,
  reply: FastifyReply,
  deps: GatewayDeps,
  candidates: readonly RegistryEndpoint[],
  options: { pricing: PricingOperation; call?: AttemptCall<R, C> },
): Promise<Dispatched<R, C>> => {
  const { completed, key, tenancy, requestId } = scope;
  const abort = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) abort.abort();
  };
  reply.raw.on('close', onClose);
  const release = () => reply.raw.off('close', onClose);

  const result = await runAttempts<R, C>(
    completed.request,
    candidates,
    {
      adapters: deps.adapters,
      credentials: (endpoint) => tenancy.credentials(key.projectId, endpoint.adapter),
      limits: deps.limits,
      onAttempt: deps.onAttempt,
    },
    {
      requestId,
      signal: abort.signal,
      budget: deps.budget,
      ...(options.call ? { call: options.call } : {}),
    },
  );
  completed.attempts = result.attempts;
  if (result.ok) {
    const { endpoint, credentials } = result;
    completed.provider = endpoint.lane;
    completed.modelServed = endpoint.model;
    completed.providerModelId = endpoint.provider_model_id;
    completed.funding = credentials.funding;
    return { ok: true, result, abort, release };
  }
  release();
  const last = result.attempts.at(-1);
  if (last) {
    completed.provider = last.provider;
    completed.modelServed = last.model;
    completed.providerModelId = last.provider_model_id;
    const consumed = result.failures.at(-1)?.consumed;
    const endpoint = result.lastEndpoint;
    if (consumed && endpoint) {
      completed.funding = tenancy.credentials(key.projectId, endpoint.adapter)?.funding ?? null;
      priceServed(scope, endpoint, options.pricing, consumed, undefined);
    }
  }
  if (abort.signal.aborted) {
    scope.finish(499, new ServiceError('upstream_error', 'client closed the request', { status: 499 }));
    return { ok: false, reply };
  }
  return { ok: false, reply: scope.fail(failureError(result.attempts, result.failures)) };
};

/**
 * Relays a committed stream (its first item, then the rest) until the upstream ends or the client
 * leaves, then releases it. Returns the failure that ends the stream in band (a read failure, an
 * in-band error, the size cap: SPEC 4.1 rule 5), or undefined; a client that went away is not one,
 * and its partial usage is still priced by the caller.
 */
export const relayCommitted = async <C>(
  result: { first?: C; rest?: AsyncIterator<C> },
  res: ServerResponse,
  abort: AbortController,
  relay: (item: C) => Promise<void>,
  release: () => void,
): Promise<ServiceError | undefined> => {
  try {
    if (result.first) await relay(result.first);
    for (;;) {
      if (res.destroyed) break;
      const next = await result.rest!.next();
      if (next.done) break;
      await relay(next.value);
    }
    return undefined;
  } catch (err) {
    if (abort.signal.aborted) return undefined;
    const message = err instanceof StreamFailure ? err.message : 'upstream stream failed';
    return new ServiceError('upstream_stream_error', message);
  } finally {
    release();
    if (res.destroyed) await result.rest!.return?.();
  }
};

/** A buffered JSON answer: time to first byte is the whole reply, then the record. */
export const sendJson = (scope: RequestScope, reply: FastifyReply, text: string): FastifyReply => {
  scope.completed.ttfbMs = Date.now() - scope.startedAt.getTime();
  scope.finish(200, undefined, scope.completed.tracing.full ? Buffer.from(text) : null);
  return reply.code(200).type('application/json').send(text);
};

/** Commits the reply to a stream: SSE headers with the request id (SPEC 4.1 rule 5). */
export const openEventStream = (reply: FastifyReply, requestId: string) => {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    [REQUEST_ID_HEADER]: requestId,
  });
  return res;
};

/**
 * The request path after an edge parsed its dialect (issue 6): request id, rate limit, selection,
 * the attempt pipeline, the reply or stream rendered in the caller's dialect, metering, and the
 * request.completed hand-off after the reply. Every chat-shaped edge of every dialect runs through
 * here; the JSON operations (embeddings, responses) share its parts in operations.ts.
 */
export const serveCompletion = async (
  request: FastifyRequest,
  reply: FastifyReply,
  deps: GatewayDeps,
  options: {
    canonical: CanonicalRequest;
    dialect: Dialect;
    capability: Capability;
    operation: string;
    requestBytes: number;
    route?: RouteRule;
  },
): Promise<FastifyReply> => {
  const { canonical, dialect } = options;
  const scope = openRequest(request, reply, deps, options);
  const { requestId, startedAt, completed, finish } = scope;
  const tracing = completed.tracing;
  const selected = admit(scope, reply, deps, { ...options, model: canonical.model });
  if (!selected.ok) return selected.reply;

  const refused = await holdEscrow(scope, deps, selected.candidates, (e) => ({
    operation: 'chat',
    prompt_tokens: Math.ceil(options.requestBytes / 4),
    max_output_tokens: canonical.maxTokens ?? e.max_output_tokens ?? 4_096,
  }));
  if (refused) return refused.refused;

  const dispatched = await dispatch(scope, reply, deps, selected.candidates, { pricing: 'chat' });
  if (!dispatched.ok) return dispatched.reply;
  const { result, abort, release } = dispatched;
  const { endpoint } = result;
  const identity = {
    id: dialect.replyId(requestId),
    created: Math.floor(startedAt.getTime() / 1_000),
    model: endpoint.model,
    requestId,
  };
  const price = (usage: Usage, serviceTier: unknown) =>
    priceServed(scope, endpoint, 'chat', usage, serviceTier);

  if (result.reply) {
    release();
    countTools(result.reply.message.tool_calls, completed.toolSummary);
    completed.usageEstimated = result.reply.usage === null;
    price(
      result.reply.usage ?? estimatedUsage(options.requestBytes, ''),
      result.reply.serviceTier ?? result.reply.raw?.service_tier,
    );
    return sendJson(scope, reply, JSON.stringify(dialect.reply(result.reply, identity)));
  }

  // Streamed: the first chunk arrived, so this candidate is committed (no fallback from here).
  const res = openEventStream(reply, requestId);
  const renderer = dialect.stream(identity, { includeUsage: canonical.includeUsage });
  const traced: string[] | null = tracing.full ? [] : null;
  const stream = new EventStreamWriter(res, traced);
  let usage: Usage | null = null;
  let opening: Usage | null = null;
  let serviceTier: unknown;
  // Everything the client was sent, for pricing a stream that ended without its usage report.
  let text = '';
  const toolCalls = new Map<number, string>();
  const relay = async (chunk: CanonicalChunk) => {
    if (completed.ttfbMs === null) completed.ttfbMs = Date.now() - startedAt.getTime();
    if (chunk.usage) usage = chunk.usage;
    if (chunk.openingUsage) opening = chunk.openingUsage;
    if (chunk.raw?.service_tier !== undefined) serviceTier = chunk.raw.service_tier;
    if (chunk.serviceTier !== undefined) serviceTier = chunk.serviceTier;
    if (chunk.delta.content) text += chunk.delta.content;
    if (chunk.delta.reasoning_content) text += chunk.delta.reasoning_content;
    for (const t of chunk.delta.tool_calls ?? []) {
      if (t.function?.name) toolCalls.set(t.index, t.function.name);
      if (t.function?.arguments) text += t.function.arguments;
    }
    await stream.write(renderer.chunk(chunk));
  };
  const streamError = await relayCommitted(result, res, abort, relay, release);
  stream.end(streamError ? renderer.error(streamError) : renderer.end(usage));
  for (const name of toolCalls.values()) completed.toolSummary[name] = (completed.toolSummary[name] ?? 0) + 1;
  completed.usageEstimated = usage === null;
  price(usage ?? observedUsage(opening, options.requestBytes, text), serviceTier);
  const disconnected = abort.signal.aborted || (res.destroyed && !res.writableFinished);
  finish(disconnected ? 499 : 200, streamError, traced ? Buffer.from(traced.join('')) : null);
  return reply;
};
