import type { ErrorCode } from '../lib/errors.js';
import type { CanonicalChunk, CanonicalReply, CanonicalRequest, Usage } from './contract.js';
import type { Adapter, RegistryEndpoint } from './endpoint.js';

/** SPEC 2.4 kinds of a failed attempt. */
export type FailureKind =
  | 'MissingProviderKey'
  | 'UpstreamStatus'
  | 'UpstreamError'
  | 'Timeout'
  | 'ResponseTooLarge'
  | 'Internal';

export interface AttemptFailure {
  kind: FailureKind;
  status_code?: number;
  /** SPEC 7.3: the upstream body verbatim (capped), or a fixed category; never a transport error. */
  message: string;
  /** The provider's own error.message when the body carried one (rendered for a single attempt). */
  providerMessage?: string;
  /** The provider's error code or exception name, when it named one. */
  providerCode?: string;
  /** The request field the provider's error names (`error.param`), when it named one. */
  providerParam?: string;
  /** Worth trying the same candidate again. */
  retryable: boolean;
  /** Worth trying the next candidate. */
  fallback: boolean;
  /** Falls forward without consuming a retry (SPEC 7.5 ServiceQuotaExceededException). */
  skipRetry?: boolean;
  /**
   * How the failure shows to the caller when the adapter knows better than the generic status
   * mapping (SPEC 7.5: status, error type by catalogue code, and the exception name as error.code).
   */
  surface?: { status: number; code: ErrorCode; displayCode?: string; param?: string };
  /**
   * Usage the upstream already served before the attempt failed (a fanned-out operation whose later
   * call failed, SPEC 4.1 rule 4): recorded and charged once although the request fails.
   */
  consumed?: Usage;
  /** How long the upstream asked to wait before another try (its Retry-After), in milliseconds. */
  retryAfterMs?: number;
}

/** A failure after the stream began: ends it with the terminal error frame (SPEC 4.1 rule 5). */
export class StreamFailure extends Error {
  constructor(
    readonly kind: 'read' | 'in_band' | 'size_cap' | 'decode',
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'StreamFailure';
  }
}

export interface Credentials {
  secret: string;
  /** The connection's base_url column (per-scope origin override), if set. */
  baseUrl: string | null;
  metadata: Record<string, unknown>;
  funding: 'byok' | 'wallet';
  connectionId: string | null;
}

export interface AttemptTarget {
  endpoint: RegistryEndpoint;
  credentials: Credentials;
  requestId: string;
  /** Aborts the upstream call: client disconnect or the request deadline. */
  signal: AbortSignal;
  /** Until response headers (buffered: the whole reply). */
  timeoutMs: number;
  limits: { maxResponseBytes: number; maxErrorMessageBytes: number };
  /** Told the upstream's response headers as they arrive (its request id for the attempt trail). */
  onHeaders?: (headers: UpstreamHeaders) => void;
}

/** Response headers as the HTTP client hands them over. */
export type UpstreamHeaders = Record<string, string | string[] | undefined>;

/** What one attempt gave: a whole reply, a stream (committed at its first item), or a failure. */
export type Outcome<R, C> =
  | { ok: true; reply: R }
  | { ok: true; stream: AsyncIterable<C> }
  | { ok: false; failure: AttemptFailure };

export type AttemptOutcome = Outcome<CanonicalReply, CanonicalChunk>;

/**
 * Operations relayed in the primary dialect's own JSON rather than through the chat contract
 * (SPEC 4.1: embeddings, responses). The canonical request keeps the parsed body in `raw`.
 */
export type JsonOperation = 'embeddings' | 'responses' | 'moderations' | 'images';

/** A buffered JSON reply: the body the caller gets, and the usage it is priced by. */
export interface JsonReply {
  body: Record<string, unknown>;
  usage: Usage | null;
  serviceTier?: unknown;
}

/** One upstream SSE event relayed as it came; `usage` when the event reports the whole reply's. */
export interface RelayedEvent {
  event: string | undefined;
  data: string;
  usage?: Usage;
  serviceTier?: unknown;
  /** Generated text the event carries, to estimate usage when a stream ends without its report. */
  text?: string;
  /** Set on a terminal event that reports the upstream's own failure (relayed, then recorded as one). */
  failure?: string;
}

export type JsonOutcome = Outcome<JsonReply, RelayedEvent>;

/** Provider adapters are mostly data and translation (STYLE.md rule 7); the pipeline owns retries. */
export interface ProviderAdapter {
  readonly id: Adapter;
  chat(request: CanonicalRequest, target: AttemptTarget): Promise<AttemptOutcome>;
  /** Absent: the adapter does not serve the operation (the structured unsupported error). */
  embeddings?(request: CanonicalRequest, target: AttemptTarget): Promise<JsonOutcome>;
  responses?(request: CanonicalRequest, target: AttemptTarget): Promise<JsonOutcome>;
  /** SPEC 4.1: the reference provider only. */
  moderations?(request: CanonicalRequest, target: AttemptTarget): Promise<JsonOutcome>;
  /** Image generation (SPEC 4.1), capability-gated per registry model. */
  images?(request: CanonicalRequest, target: AttemptTarget): Promise<JsonOutcome>;
  /** Token counting the provider answers itself (SPEC 4.2 rule 9); absent: the gateway estimates. */
  countTokens?(request: CanonicalRequest, target: AttemptTarget): Promise<CountOutcome>;
}

export type CountOutcome = { ok: true; inputTokens: number } | { ok: false; failure: AttemptFailure };

/**
 * An operation the candidate's adapter cannot serve (SPEC 4.7: responses on the managed runtime,
 * embeddings on the messages-style provider). Capability gating normally keeps such candidates
 * out; when the registry claims otherwise the next candidate may still serve.
 */
export const unsupportedOperation = (adapter: string, operation: string): AttemptFailure => {
  const message = `${operation} is not supported by the ${adapter} provider`;
  return {
    kind: 'Internal',
    message,
    providerMessage: message,
    retryable: false,
    fallback: true,
    surface: { status: 400, code: 'invalid_request_error', displayCode: 'unsupported_operation' },
  };
};
