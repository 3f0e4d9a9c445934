/**
 * The one error catalogue (STYLE.md rule 8): stable codes, their HTTP status and how each dialect
 * names them. Expected outcomes are returned as union results; `ServiceError` is thrown only where
 * a request must stop (a broken rule at an edge, a failed dependency at start-up).
 */

export const ERROR_CATALOGUE = {
  bad_request: { status: 400, primaryType: 'invalid_request_error', altType: 'invalid_request_error' },
  invalid_request_error: {
    status: 400,
    primaryType: 'invalid_request_error',
    altType: 'invalid_request_error',
  },
  no_compatible_candidate: {
    status: 400,
    primaryType: 'no_compatible_candidate',
    altType: 'invalid_request_error',
  },
  unknown_model: { status: 404, primaryType: 'invalid_request_error', altType: 'not_found_error' },
  /** A selector names a tenant connection the project does not have for that lane (SPEC 5). */
  unknown_connection: { status: 404, primaryType: 'invalid_request_error', altType: 'not_found_error' },
  unauthenticated: { status: 401, primaryType: 'authentication_error', altType: 'authentication_error' },
  forbidden: { status: 403, primaryType: 'permission_error', altType: 'permission_error' },
  /** A policy of the org, project or API key refuses the request (SPEC 1.9, 7.4); no upstream call. */
  policy_denied: { status: 403, primaryType: 'permission_error', altType: 'permission_error' },
  not_found: { status: 404, primaryType: 'not_found_error', altType: 'not_found_error' },
  conflict: { status: 409, primaryType: 'invalid_request_error', altType: 'invalid_request_error' },
  /** If-Match names a revision that is no longer current (RFC 9110 13.1.1). */
  precondition_failed: {
    status: 412,
    primaryType: 'invalid_request_error',
    altType: 'invalid_request_error',
  },
  payload_too_large: { status: 413, primaryType: 'invalid_request_error', altType: 'request_too_large' },
  unsupported_media_type: {
    status: 415,
    primaryType: 'invalid_request_error',
    altType: 'invalid_request_error',
  },
  rate_limit_error: { status: 429, primaryType: 'rate_limit_error', altType: 'rate_limit_error' },
  insufficient_funds: { status: 402, primaryType: 'insufficient_quota', altType: 'permission_error' },
  /**
   * A monthly spend cap of the org, project or API key is reached. 402, not 429:
   * waiting does not help until the cap is raised or the UTC month turns, and SDKs retry a 429 on
   * their own. The alternate table of SPEC 7.2 has no payment type: permission_error, so 403 there.
   */
  spend_cap_exceeded: { status: 402, primaryType: 'insufficient_quota', altType: 'permission_error' },
  not_implemented: { status: 501, primaryType: 'not_implemented', altType: 'api_error' },
  connection_not_configured: { status: 503, primaryType: 'upstream_error', altType: 'api_error' },
  upstream_error: { status: 502, primaryType: 'upstream_error', altType: 'api_error' },
  upstream_stream_error: { status: 502, primaryType: 'upstream_stream_error', altType: 'api_error' },
  service_unavailable: { status: 503, primaryType: 'service_unavailable', altType: 'overloaded_error' },
  internal_error: { status: 500, primaryType: 'internal_error', altType: 'api_error' },
  shared_model_capability_change: {
    status: 400,
    primaryType: 'invalid_request_error',
    altType: 'invalid_request_error',
  },
} as const satisfies Record<string, { status: number; primaryType: string; altType: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/**
 * The failures a client may usefully try again (after its Retry-After): a rate limit, a service
 * that is briefly unavailable. Every other failure is final: the gateway has already spent its own
 * retries and fallbacks on it, or trying again cannot change the answer; it carries
 * `x-should-retry: false`, which the official SDKs obey instead of retrying twice on their own.
 */
const CLIENT_RETRYABLE: ReadonlySet<ErrorCode> = new Set(['rate_limit_error', 'service_unavailable']);

export const clientMayRetry = (err: Pick<ServiceError, 'code'>): boolean => CLIENT_RETRYABLE.has(err.code);

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly details: Record<string, unknown> | undefined;
  /** What error.code shows when it is not the catalogue code (e.g. an upstream exception name). */
  readonly displayCode: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      param?: string;
      status?: number;
      details?: Record<string, unknown>;
      cause?: unknown;
      displayCode?: string;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.status = options.status ?? ERROR_CATALOGUE[code].status;
    this.param = options.param ?? null;
    this.details = options.details;
    this.displayCode = options.displayCode;
  }
}

/** Primary-dialect envelope (SPEC 7.1). */
export const renderPrimaryError = (err: ServiceError, requestId?: string) => ({
  error: {
    type: ERROR_CATALOGUE[err.code].primaryType,
    code: err.displayCode ?? err.code,
    message: err.message,
    param: err.param,
    ...(requestId ? { request_id: requestId } : {}),
    ...(err.details ?? {}),
  },
});

/** Alternate-dialect envelope (SPEC 7.2). */
export const renderAltError = (err: ServiceError) => ({
  type: 'error',
  error: { type: ERROR_CATALOGUE[err.code].altType, message: err.message },
});

/** Plain envelope for the service's own `/api` routes: a `message` field names what is wrong. */
export const renderApiError = (err: ServiceError) => ({
  error: err.code,
  message: err.message,
  ...(err.param ? { param: err.param } : {}),
});

/** One-line description of any thrown value, for CLI output and logs. Never a stack trace. */
export const describeError = (err: unknown): string => {
  if (err instanceof AggregateError && err.errors.length > 0) return describeError(err.errors[0]);
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const msg = err.message || String(code ?? err.name);
    return typeof code === 'string' && !msg.includes(code) ? `${msg} (${code})` : msg;
  }
  return String(err);
};
