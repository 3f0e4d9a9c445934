import type { Adapter } from '../commands/registry/events.js';
import type { CanonicalChunk, CanonicalReply, CanonicalRequest } from '../gateway/contract.js';
import type { RegistryEndpoint } from '../gateway/registry/snapshot.js';
import type { ErrorCode } from '../lib/errors.js';

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
}

export type AttemptOutcome =
  | { ok: true; reply: CanonicalReply }
  | { ok: true; stream: AsyncIterable<CanonicalChunk> }
  | { ok: false; failure: AttemptFailure };

/** Provider adapters are mostly data and translation (STYLE.md rule 7); the pipeline owns retries. */
export interface ProviderAdapter {
  readonly id: Adapter;
  chat(request: CanonicalRequest, target: AttemptTarget): Promise<AttemptOutcome>;
}
