import type { EscrowPort } from '../commands/wallet/ports.js';
import { clientMayRetry, describeError, ERROR_CATALOGUE, ServiceError } from '../lib/errors.js';
import type { PolicyDecision, PolicyQuery } from '../policy/evaluate.js';
import { billingFailed, type Operation as PricingOperation, priceUsage } from '../pricing/index.js';
import type { CanonicalChunk, CanonicalReply, CanonicalRequest, Usage } from '../providers/contract.js';
import type { Adapter, RegistryEndpoint } from '../providers/endpoint.js';
import type { AttemptTarget, ProviderAdapter } from '../providers/provider.js';
import type { ApiKeyIdentity } from './auth/api-key-cache.js';
import type { BegunSink, CompletedRequest, CompletionSink } from './completed.js';
import type { FileSearchPort } from './file-search-port.js';
import { pricingUsageOf } from './metering.js';
import { type AttemptCall, type PipelineBudget, type PipelineResult, runAttempts } from './pipeline.js';
import type { RateLimiter } from './rate-limit.js';
import type { RegistrySnapshot } from './registry/snapshot.js';
import type { Dialect } from './render/dialect.js';
import { failureError } from './render/failures.js';
import type { KeyRateLimits, RateLimitRefusal } from './shared-rate-limit.js';
import type { TenancySnapshot } from './tenancy.js';
import { traceContextOf } from './trace-context.js';

/** What the request path is built from: snapshots, adapters, limits, and where its records go. */
export interface GatewayDeps {
  registry: () => RegistrySnapshot;
  tenancy: () => TenancySnapshot;
  adapters: ReadonlyMap<Adapter, ProviderAdapter>;
  budget: PipelineBudget;
  limits: AttemptTarget['limits'];
  rateLimiter: RateLimiter;
  onAttempt: (provider: string, outcome: string) => void;
  onCompleted: CompletionSink;
  /** Absent: a process that dies mid-request leaves no record of it. */
  onBegun?: BegunSink;
  observe: (
    route: string,
    status: number,
    stream: boolean,
    seconds: number,
    ttfbSeconds: number | null,
  ) => void;
  escrow: EscrowPort;
  /** Monthly spend caps (gateway/spend-caps.ts): an in-memory verdict, refreshed off the request path. */
  spendCaps?: { refusal(key: ApiKeyIdentity): ServiceError | null };
  /** Policy decisions (SPEC 1.9): in process, or PolicyService over gRPC (gateway/policy.ts). */
  policy: PolicyPort;
  /**
   * The per-key request and token limits a policy sets, held across every gateway process
   * (gateway/shared-rate-limit.ts). Absent: policy rate limits are not enforced.
   */
  keyLimits?: KeyLimiter;
  /** Vector store search for hosted file_search (SPEC 4.1); absent: such requests answer 503. */
  fileSearch?: FileSearchPort;
}

/**
 * The caller's body as recorded: a multipart request's text fields, and each file by its name, type
 * and size under the field it came in (the bytes went upstream; they are not a body to keep).
 */
const withUploads = (canonical: CanonicalRequest): Record<string, unknown> => {
  if (!canonical.uploads?.length) return canonical.raw;
  const files: Record<string, unknown[]> = {};
  for (const u of canonical.uploads) {
    const summary = { filename: u.filename, content_type: u.contentType, bytes: u.bytes.length };
    files[u.field] = [...(files[u.field] ?? []), summary];
  }
  return { ...canonical.raw, ...files };
};

/**
 * Where the request path asks for a policy decision (SPEC 1.9, 4.8): in process over the policy
 * snapshot, or PolicyService.Evaluate over gRPC when POLICY_GRPC_ENDPOINT is set (gateway/policy.ts).
 * Both run the same evaluation (src/policy/evaluate.ts).
 */
export interface PolicyPort {
  evaluate(query: PolicyQuery): PolicyDecision | Promise<PolicyDecision>;
}

/** Enforces a key's per-minute limits across processes; see SharedRateLimiter. */
export interface KeyLimiter {
  admit(apiKeyId: string, limits: KeyRateLimits): Promise<RateLimitRefusal | null>;
  spend(apiKeyId: string, tokens: number): void;
}

/**
 * Where the frames of a committed event stream go (SPEC 4.1 rule 5, 4.2 rule 5). An edge writes them
 * to its socket; `write` returns a promise only while the client cannot take more.
 */
export interface FrameSink {
  write(frames: string | readonly string[]): Promise<void> | undefined;
  /**
   * Writes the last frames and ends the reply at the end of the current turn, after the request
   * path recorded the request (RequestScope.finish, SPEC 2.5); the frames count as written at once.
   */
  end(frames?: string | readonly string[]): void;
  /** The client went away before the whole reply was written. */
  readonly closed: boolean;
}

/** The caller's connection, as far as the request path needs it. */
export interface ClientPort {
  /** From now on a client that leaves before its reply is written aborts `abort`. */
  watch(abort: AbortController): void;
  /** Stops treating a closed connection as a cancellation. */
  release(): void;
  /**
   * Commits the reply to an event stream: status 200, the event-stream headers and the request id
   * (SPEC 4.1 rule 5, 7.4). `capture` receives every frame written, for full payload tracing (SPEC 1.10).
   */
  openStream(capture: string[] | null): FrameSink;
}

/** One request as an edge hands it over, its dialect parsed into the canonical request. */
export interface GatewayRequest {
  canonical: CanonicalRequest;
  /** The dialect the edge speaks: errors and chat replies are rendered in it. */
  dialect: Dialect;
  key: ApiKeyIdentity;
  /** Assigned by the edge; every answer from here on carries it (SPEC 7.4). */
  requestId: string;
  /** The body's size as received: the escrow and usage estimates are made from it (SPEC 8). */
  requestBytes: number;
  /** The svc-enable-tracing header as received (SPEC 1.10). */
  tracingHeader: string | string[] | undefined;
  /** The x-svc-session-id header as received. */
  sessionHeader: string | string[] | undefined;
  /** The W3C traceparent header as received (SPEC 4.3: the gateway's LLM span joins the caller's trace). */
  traceparentHeader?: string | string[] | undefined;
  client: ClientPort;
}

/**
 * What the edge writes back: a JSON body with its status (and Retry-After for a gateway rate limit,
 * SPEC 7.4), or nothing, because the reply was streamed or the client left before it.
 */
export type GatewayAnswer =
  | {
      readonly kind: 'json';
      readonly status: number;
      readonly body: string;
      /** How long the caller should wait before trying again (rate limits, SPEC 7.4). */
      readonly retryAfterMs: number | null;
      /** Whether trying again may help (lib/errors.ts clientMayRetry); null for a success. */
      readonly shouldRetry: boolean | null;
    }
  | { readonly kind: 'streamed' | 'client_gone' };

const STREAMED: GatewayAnswer = Object.freeze({ kind: 'streamed' });
const CLIENT_GONE: GatewayAnswer = Object.freeze({ kind: 'client_gone' });

const tracingOf = (
  header: GatewayRequest['tracingHeader'],
  key: ApiKeyIdentity,
  tenancy: TenancySnapshot,
): CompletedRequest['tracing'] => {
  if (header === '1') return { full: true, source: 'header' };
  if (key.tracing) return { full: true, source: 'api_key' };
  if (tenancy.projectTracing(key.projectId)) return { full: true, source: 'project' };
  if (tenancy.org(key.orgId)?.tracing) return { full: true, source: 'org' };
  return { full: false, source: 'none' };
};

/**
 * One request on its way from the canonical request to its record: the snapshots it was admitted
 * on, the request.completed record it fills, the cancellation of its upstream calls, and how it ends.
 */
export class RequestScope {
  readonly deps: GatewayDeps;
  readonly input: GatewayRequest;
  readonly startedAt = new Date();
  readonly tenancy: TenancySnapshot;
  readonly registry: RegistrySnapshot;
  readonly completed: CompletedRequest;
  /** Aborts the upstream calls when the client leaves; set when the attempts begin. */
  abort: AbortController | null = null;
  /** A policy limits the key's tokens a minute: the tokens this request used are counted at its end. */
  spendsTokens = false;
  /**
   * Whether policy permits full payload capture (SPEC 1.10, 2.3): null until a decision is taken,
   * and a request recorded without one (the policy service did not answer) captures nothing.
   */
  capturePermitted: boolean | null = null;
  /** Set once the outcome is recorded: a request has one record. */
  private finished = false;
  /**
   * The body the caller sent, as captured under full tracing: the alternate edge's inbound JSON,
   * not its translation, and never what admission wrote into it (a policy's output ceiling).
   */
  private readonly callerBody: Record<string, unknown>;

  constructor(deps: GatewayDeps, input: GatewayRequest) {
    this.deps = deps;
    this.input = input;
    const { key, canonical } = input;
    const startedAt = this.startedAt;
    this.tenancy = deps.tenancy();
    const session = typeof input.sessionHeader === 'string' ? input.sessionHeader : null;
    this.completed = {
      requestId: input.requestId,
      key,
      request: canonical,
      requestBytes: input.requestBytes,
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
      tracing: tracingOf(input.tracingHeader, key, this.tenancy),
      sessionId: session,
      traceContext: traceContextOf(input.traceparentHeader, session),
      toolSummary: {},
      bodies: null,
    };
    this.registry = deps.registry();
    this.callerBody = canonical.preserved?.raw ?? withUploads(canonical);
  }

  /**
   * Records the outcome and hands request.completed over before the reply's last bytes are sent: a
   * buffered reply is written after this returns, and a stream's sink ends the reply after the
   * current turn (FrameSink.end), so an answered request is on disk even if the process dies the
   * next instant (SPEC 2.5; the publishing runs in the background, ARCHITECTURE.md).
   */
  finish(status: number, error?: ServiceError, responseBody?: Buffer | null): void {
    if (this.finished) return;
    this.finished = true;
    // Every request ends here once, broken ones too: a client leaving from now on aborts nothing.
    this.input.client.release();
    const { completed, startedAt } = this;
    const canonical = completed.request;
    completed.finishedAt = new Date();
    completed.httpStatus = status;
    completed.status = error ? 'error' : 'success';
    if (error) {
      completed.errorCode = error.displayCode ?? error.code;
      completed.errorType = ERROR_CATALOGUE[error.code].primaryType;
    }
    // Full tracing asked for and no policy decision permitting it (the policy service did not answer).
    if (completed.tracing.full && this.capturePermitted !== true)
      completed.tracing = { ...completed.tracing, full: false };
    if (completed.tracing.full)
      completed.bodies = {
        request: Buffer.from(JSON.stringify(this.callerBody)),
        response: responseBody ?? null,
      };
    if (this.spendsTokens && completed.usage && completed.usage.total_tokens > 0)
      this.deps.keyLimits?.spend(completed.key.apiKeyId, completed.usage.total_tokens);
    const seconds = (completed.finishedAt.getTime() - startedAt.getTime()) / 1_000;
    this.deps.observe(
      canonical.route,
      status,
      canonical.stream,
      seconds,
      completed.ttfbMs === null ? null : completed.ttfbMs / 1_000,
    );
    this.deps.onCompleted(completed);
  }

  /**
   * A request the gateway failed on after admission, by a bug: still recorded, with whatever was
   * served and priced so far, so its hold settles and its usage is not lost (SPEC 4.1 rule 10).
   */
  finishBroken(): void {
    this.finish(500, new ServiceError('internal_error', 'internal error'));
  }

  /** Finishes with an error in the edge's dialect (SPEC 7.1, 7.2). */
  fail(error: ServiceError, retryAfterMs: number | null = null): GatewayAnswer {
    const { dialect, requestId } = this.input;
    const status = dialect.status?.(error) ?? error.status;
    this.finish(status, error);
    const shouldRetry = clientMayRetry(error);
    return {
      kind: 'json',
      status,
      body: JSON.stringify(dialect.error(error, requestId)),
      retryAfterMs: shouldRetry ? retryAfterMs : null,
      shouldRetry,
    };
  }

  /** A buffered JSON answer: time to first byte is the whole reply, then the record. */
  answer(text: string): GatewayAnswer {
    const { completed } = this;
    completed.ttfbMs = Date.now() - this.startedAt.getTime();
    this.finish(200, undefined, completed.tracing.full ? Buffer.from(text) : null);
    return { kind: 'json', status: 200, body: text, retryAfterMs: null, shouldRetry: null };
  }

  /**
   * Prices a served request's usage on the endpoint's rate card at the request's start. Whatever
   * its body held, a served request is priced or marked billing-failed, never left unrecorded
   * (SPEC 4.1 rule 10, 7.6 rule 2): what cannot be read is served and not charged.
   */
  price(endpoint: RegistryEndpoint, operation: PricingOperation, usage: Usage, serviceTier: unknown): void {
    const { completed } = this;
    completed.usage = usage;
    const card = this.registry.cardAt(endpoint, this.startedAt.getTime());
    try {
      completed.pricing = priceUsage(card, pricingUsageOf(operation, usage, completed.request, serviceTier));
    } catch (err) {
      const detail = `the request could not be read for pricing: ${describeError(err)}`;
      completed.pricing = billingFailed({ reason: 'unreadable_request', detail }, card);
    }
  }

  /**
   * The attempt pipeline for the admitted candidates (SPEC 1.2), cancelled when the client leaves.
   * A served request has its endpoint recorded; a failed one its last attempt, and usage an upstream
   * already served before the failure is priced all the same (SPEC 4.1 rule 4).
   */
  async dispatch<R = CanonicalReply, C = CanonicalChunk>(
    candidates: readonly RegistryEndpoint[],
    pricing: PricingOperation,
    call?: AttemptCall<R, C>,
  ): Promise<PipelineResult<R, C>> {
    const { completed, tenancy, deps, input } = this;
    const { key } = input;
    const abort = new AbortController();
    this.abort = abort;
    input.client.watch(abort);
    deps.onBegun?.(completed);
    const result = await runAttempts<R, C>(
      completed.request,
      candidates,
      {
        adapters: deps.adapters,
        credentials: (endpoint) => tenancy.credentials(key.projectId, endpoint),
        limits: deps.limits,
        onAttempt: deps.onAttempt,
      },
      { requestId: input.requestId, signal: abort.signal, budget: deps.budget, ...(call ? { call } : {}) },
    );
    completed.attempts = result.attempts;
    if (result.ok) {
      const { endpoint, credentials } = result;
      completed.provider = endpoint.lane;
      completed.modelServed = endpoint.model;
      completed.providerModelId = endpoint.provider_model_id;
      completed.funding = credentials.funding;
      return result;
    }
    const last = result.attempts.at(-1);
    if (last) {
      completed.provider = last.provider;
      completed.modelServed = last.model;
      completed.providerModelId = last.provider_model_id;
      const consumed = result.failures.at(-1)?.consumed;
      const endpoint = result.lastEndpoint;
      if (consumed && endpoint) {
        completed.funding = tenancy.credentials(key.projectId, endpoint)?.funding ?? null;
        this.price(endpoint, pricing, consumed, undefined);
      }
    }
    return result;
  }

  /** A request whose attempts all failed: the failure in the caller's envelope, or 499 when it left. */
  failed(result: Extract<PipelineResult<unknown, unknown>, { ok: false }>): GatewayAnswer {
    if (this.abort?.signal.aborted) {
      this.finish(499, new ServiceError('upstream_error', 'client closed the request', { status: 499 }));
      return CLIENT_GONE;
    }
    // An upstream's Retry-After was honoured by the pipeline; like its other rate-limit headers it
    // is not forwarded (SPEC 7.4).
    return this.fail(failureError(result.attempts, result.failures));
  }

  /**
   * Records a committed stream that ended (SPEC 4.1 rule 5): 499 when the client left before its
   * end, else 200 with the failure that ended it in band, if any.
   */
  endStream(sink: FrameSink, failure: ServiceError | undefined, traced: string[] | null): GatewayAnswer {
    const disconnected = this.abort!.signal.aborted || sink.closed;
    this.finish(disconnected ? 499 : 200, failure, traced ? Buffer.from(traced.join('')) : null);
    return STREAMED;
  }
}
