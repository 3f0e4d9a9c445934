import type { CanonicalChunk, CanonicalReply, CanonicalRequest } from '../providers/contract.js';
import type { Adapter, RegistryEndpoint } from '../providers/endpoint.js';
import { RETRY_AFTER_MAX_MS, upstreamRequestIdOf } from '../providers/http.js';
import type {
  AttemptFailure,
  AttemptTarget,
  Credentials,
  FailureKind,
  Outcome,
  ProviderAdapter,
  UpstreamHeaders,
} from '../providers/provider.js';

/** One entry of the attempt trail (SPEC 2.4 plus what analytics needs). */
export interface AttemptRecord {
  source: string;
  kind: FailureKind | null;
  status_code: number | null;
  message: string | null;
  provider: string;
  model: string;
  provider_model_id: string;
  outcome: 'success' | 'failure';
  latency_ms: number;
  /** The upstream's own id of its answer (x-request-id, request-id, ...), when it sent one. */
  upstream_request_id: string | null;
}

export interface PipelineBudget {
  /** Retries shared by every candidate of the request (fallback to another candidate is free). */
  retries: number;
  deadlineMs: number;
  attemptTimeoutMs: number;
  backoffMs: number;
}

export type PipelineResult<R = CanonicalReply, C = CanonicalChunk> =
  | {
      ok: true;
      endpoint: RegistryEndpoint;
      credentials: Credentials;
      reply?: R;
      /** For streams: the first chunk already read (the commit point) and the rest. */
      first?: C;
      rest?: AsyncIterator<C>;
      attempts: AttemptRecord[];
    }
  | {
      ok: false;
      attempts: AttemptRecord[];
      failures: AttemptFailure[];
      /** The endpoint of the last attempt made: what a failure's consumed usage is priced on. */
      lastEndpoint?: RegistryEndpoint;
    };

/** One attempt of the request's operation on one candidate (chat unless the request path says otherwise). */
export type AttemptCall<R, C> = (adapter: ProviderAdapter, target: AttemptTarget) => Promise<Outcome<R, C>>;

export interface PipelineDeps {
  adapters: ReadonlyMap<Adapter, ProviderAdapter>;
  credentials: (endpoint: RegistryEndpoint) => Credentials | null;
  limits: AttemptTarget['limits'];
  onAttempt?: (provider: string, outcome: string) => void;
}

/**
 * How long to wait before the `retry`-th retry (0 for the first): what the upstream asked for
 * (its Retry-After), or exponential backoff from `baseMs` with jitter (half fixed, half random) so
 * that callers failed together do not come back together. Null when the wait would not end before
 * the deadline (with room for the attempt itself) or is longer than a minute: the next candidate is
 * tried instead.
 */
export const retryDelay = (
  retry: number,
  baseMs: number,
  retryAfterMs: number | undefined,
  remainingMs: number,
  random: () => number = Math.random,
): number | null => {
  const wait =
    retryAfterMs !== undefined
      ? retryAfterMs
      : Math.round(baseMs * 2 ** Math.min(retry, 10) * (0.5 + 0.5 * random()));
  return wait <= RETRY_AFTER_MAX_MS && wait < remainingMs / 2 ? wait : null;
};

/** Backoff that a client leaving cuts short; the listener goes whichever ends it. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The attempt pipeline (SPEC 1.2): each candidate in order; a retryable failure is
 * tried again while the shared retry budget and the deadline last, then the next candidate. A
 * stream commits once its first chunk arrived: later failures end the stream, never fall back.
 */
export const runAttempts = async <R = CanonicalReply, C = CanonicalChunk>(
  request: CanonicalRequest,
  candidates: readonly RegistryEndpoint[],
  deps: PipelineDeps,
  context: {
    requestId: string;
    signal: AbortSignal;
    budget: PipelineBudget;
    /** The operation other than chat (embeddings, responses, token counting) this request dispatches. */
    call?: AttemptCall<R, C>;
  },
): Promise<PipelineResult<R, C>> => {
  const chat: AttemptCall<R, C> = (adapter, target) =>
    adapter.chat(request, target) as Promise<Outcome<R, C>>;
  const call = context.call ?? chat;
  const attempts: AttemptRecord[] = [];
  const failures: AttemptFailure[] = [];
  const deadline = Date.now() + context.budget.deadlineMs;
  let retries = context.budget.retries;
  let lastEndpoint: RegistryEndpoint | undefined;
  // The upstream's id of the attempt in flight, from its response headers.
  let upstreamId: string | null = null;
  const onHeaders = (headers: UpstreamHeaders) => {
    upstreamId = upstreamRequestIdOf(headers);
  };
  const failed = () => ({
    ok: false as const,
    attempts,
    failures,
    ...(lastEndpoint ? { lastEndpoint } : {}),
  });

  const record = (endpoint: RegistryEndpoint, started: number, failure: AttemptFailure | null) => {
    lastEndpoint = endpoint;
    attempts.push({
      // As the selector names it: `lane/model`, or `lane:connection/model` for a named connection.
      source:
        endpoint.connection === undefined
          ? `${endpoint.lane}/${endpoint.model}`
          : `${endpoint.lane}:${endpoint.connection}/${endpoint.model}`,
      kind: failure?.kind ?? null,
      status_code: failure?.status_code ?? null,
      message: failure?.message ?? null,
      provider: endpoint.lane,
      model: endpoint.model,
      provider_model_id: endpoint.provider_model_id,
      outcome: failure ? 'failure' : 'success',
      latency_ms: Date.now() - started,
      upstream_request_id: upstreamId,
    });
    upstreamId = null;
    deps.onAttempt?.(endpoint.lane, failure ? failure.kind : 'success');
    if (failure) failures.push(failure);
  };

  for (const endpoint of candidates) {
    const adapter = deps.adapters.get(endpoint.adapter);
    const credentials = deps.credentials(endpoint);
    if (!adapter || !credentials) {
      record(endpoint, Date.now(), {
        kind: adapter ? 'MissingProviderKey' : 'Internal',
        message: adapter
          ? `no credential for lane ${endpoint.lane} (${endpoint.adapter}): neither a project connection named primary nor a platform key`
          : `the ${endpoint.adapter} adapter is not available in this build`,
        retryable: false,
        fallback: true,
      });
      continue;
    }
    for (;;) {
      if (context.signal.aborted) return failed();
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        record(endpoint, Date.now(), {
          kind: 'Timeout',
          message: 'request deadline reached',
          retryable: false,
          fallback: false,
        });
        return failed();
      }
      const started = Date.now();
      const outcome = await call(adapter, {
        endpoint,
        credentials,
        requestId: context.requestId,
        signal: context.signal,
        timeoutMs: Math.min(context.budget.attemptTimeoutMs, remaining),
        limits: deps.limits,
        onHeaders,
      }).catch(
        // An adapter that throws (a body it could not serialize, a bug) fails this attempt like any
        // other: recorded, and the next candidate tried; never a 500 for the whole request.
        (): { ok: false; failure: AttemptFailure } => ({
          ok: false,
          failure: {
            kind: 'Internal',
            message: `the gateway could not make the ${endpoint.adapter} request`,
            retryable: false,
            fallback: true,
          },
        }),
      );
      let failure: AttemptFailure;
      if (outcome.ok && 'reply' in outcome) {
        record(endpoint, started, null);
        return { ok: true, endpoint, credentials, reply: outcome.reply, attempts };
      }
      if (outcome.ok) {
        const it = outcome.stream[Symbol.asyncIterator]();
        try {
          const first = await it.next();
          record(endpoint, started, null);
          return {
            ok: true,
            endpoint,
            credentials,
            first: first.done ? undefined : first.value,
            rest: it,
            attempts,
          };
        } catch {
          // Nothing reached the client yet: this is still an ordinary, retryable attempt failure.
          failure = {
            kind: 'UpstreamError',
            message: 'upstream stream failed before its first chunk',
            retryable: true,
            fallback: true,
          };
        }
      } else {
        failure = outcome.failure;
      }
      record(endpoint, started, failure);
      if (context.signal.aborted) return failed();
      if (failure.retryable && !failure.skipRetry && retries > 0) {
        const wait = retryDelay(
          context.budget.retries - retries,
          context.budget.backoffMs,
          failure.retryAfterMs,
          deadline - Date.now(),
        );
        if (wait !== null) {
          retries -= 1;
          await sleep(wait, context.signal);
          continue;
        }
      }
      if (!failure.fallback) return failed();
      break;
    }
  }
  return failed();
};
