import type { AttemptFailure } from '../provider.js';

/**
 * SPEC 7.5: how a conversation-runtime exception surfaces (status, error type, retry and fallback)
 * and SPEC 7.3: its message normalized and redacted, never the raw body or transport error.
 */

const THROTTLED = new Set(['ThrottlingException', 'TooManyRequestsException']);
const AUTHENTICATION = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
]);

/**
 * HTTP status the runtime documents for each exception. Exceptions that arrive as stream frames
 * carry no status of their own, yet the pipeline still needs one to classify the attempt.
 */
const DOCUMENTED_STATUS: Record<string, number> = {
  AccessDeniedException: 403,
  ExpiredTokenException: 403,
  InternalServerException: 500,
  InvalidSignatureException: 403,
  ModelErrorException: 424,
  ModelNotReadyException: 429,
  ModelStreamErrorException: 424,
  ModelTimeoutException: 408,
  ResourceNotFoundException: 404,
  ServiceQuotaExceededException: 400,
  ServiceUnavailableException: 503,
  ThrottlingException: 429,
  TooManyRequestsException: 429,
  UnrecognizedClientException: 403,
  ValidationException: 400,
};

export const documentedStatus = (name: string | null): number =>
  (name === null ? undefined : DOCUMENTED_STATUS[name]) ?? 502;

const EXCEPTION_NAME = /^[A-Za-z][A-Za-z0-9]{0,99}$/;

/**
 * The exception name from `x-amzn-errortype` (`Name:namespace-uri`) or a body `__type`
 * (`namespace#Name`, sometimes with the same `:` suffix). Stream frames name it in lower camel
 * case (`throttlingException`), so the first letter is raised to match the HTTP spelling.
 */
export const exceptionName = (header: string | undefined, body: unknown): string | null => {
  const fromBody =
    body && typeof body === 'object' && typeof (body as { __type?: unknown }).__type === 'string'
      ? (body as { __type: string }).__type
      : undefined;
  for (const raw of [header, fromBody]) {
    if (raw === undefined) continue;
    const name = (raw.split(':', 1)[0] ?? '').split('#').at(-1)?.trim() ?? '';
    if (EXCEPTION_NAME.test(name)) return name.charAt(0).toUpperCase() + name.slice(1);
  }
  return null;
};

const MESSAGE_CAP = 2_048;

/**
 * Strips what identifies the caller or the upstream: URLs (and bare AWS hosts), ARNs, access key
 * ids and 12-digit account ids; whitespace collapses so a message reads as one line.
 */
export const redactMessage = (text: string, cap = MESSAGE_CAP): string => {
  const redacted = text
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, '<url>')
    .replace(/\barn:aws[a-z-]*:[^\s"',;()<>]+/gi, '<arn>')
    .replace(/\b[a-z0-9.-]+\.amazonaws\.com(?:\.cn)?\b/gi, '<host>')
    .replace(/\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{12,}\b/g, '<access-key-id>')
    .replace(/(?<!\d)\d{12}(?!\d)/g, '<account-id>')
    .replace(/\s+/g, ' ')
    .trim();
  const bytes = Buffer.from(redacted, 'utf8');
  if (bytes.length <= cap) return redacted;
  return `${bytes
    .subarray(0, cap)
    .toString('utf8')
    .replace(/\uFFFD+$/, '')}… (truncated by the service)`;
};

/** The runtime's own message field (`message`, or `Message` on some exceptions), if a string. */
export const bodyMessage = (body: unknown): string | undefined => {
  if (!body || typeof body !== 'object') return undefined;
  const { message, Message } = body as { message?: unknown; Message?: unknown };
  if (typeof message === 'string') return message;
  return typeof Message === 'string' ? Message : undefined;
};

/**
 * SPEC 7.5, row by row. `status` is the upstream HTTP status, or the documented one for an
 * exception that arrived as a stream frame before anything was sent to the client.
 */
export const exceptionFailure = (
  name: string | null,
  status: number,
  rawMessage: string | undefined,
  cap = MESSAGE_CAP,
): AttemptFailure => {
  const normalized = rawMessage === undefined ? '' : redactMessage(rawMessage, cap);
  const providerMessage =
    normalized !== '' ? normalized : `the managed runtime answered HTTP ${status}${name ? ` (${name})` : ''}`;
  const base = {
    kind: 'UpstreamStatus' as const,
    status_code: status,
    message: name ? `${name}: ${providerMessage}` : providerMessage,
    providerMessage,
    ...(name ? { providerCode: name } : {}),
  };
  const displayCode = name ? { displayCode: name } : {};
  if (name !== null && THROTTLED.has(name)) {
    return {
      ...base,
      retryable: true,
      fallback: true,
      surface: { status: 429, code: 'rate_limit_error', ...displayCode },
    };
  }
  if (name === 'ServiceQuotaExceededException') {
    return {
      ...base,
      retryable: false,
      fallback: true,
      skipRetry: true,
      surface: { status: 429, code: 'rate_limit_error', ...displayCode },
    };
  }
  if (name === 'ValidationException') {
    return {
      ...base,
      retryable: false,
      fallback: false,
      surface: { status: 400, code: 'invalid_request_error', ...displayCode },
    };
  }
  if (name !== null && AUTHENTICATION.has(name)) {
    // Another candidate may hold a credential that works, so the request may still fall forward.
    return {
      ...base,
      retryable: false,
      fallback: true,
      surface: { status: 502, code: 'upstream_error', ...displayCode },
    };
  }
  const retryable = status === 429 || status === 408 || status >= 500;
  return {
    ...base,
    retryable,
    fallback: retryable || status === 401 || status === 403 || status === 404,
    surface: { status, code: 'upstream_error', ...displayCode },
  };
};
