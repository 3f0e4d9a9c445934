import type { CanonicalRequest } from '../contract.js';
import { connectionOrLane } from '../destinations.js';
import { attemptCall, callUpstream, failureFromStatus, readCapped, type UpstreamResponse } from '../http.js';
import type {
  AttemptFailure,
  AttemptOutcome,
  AttemptTarget,
  CountOutcome,
  ProviderAdapter,
} from '../provider.js';
import { messagesReply } from './reply.js';
import { inBandError, type MessagesEvent, messagesChunks, upstreamEvents } from './stream.js';
import { countBody, messagesBody, preservedBody } from './translate.js';
import { isObject } from './usage.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
/** The wire version we speak; the caller's own version header is ignored (SPEC 9.2). */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Connection base_url, else the lane's catalog base_url, else the public API; a bare origin gains /v1. */
export const anthropicBaseUrl = (connectionBaseUrl: string | null, laneBaseUrl: string | null): string => {
  const url = new URL(connectionBaseUrl ?? laneBaseUrl ?? ANTHROPIC_DEFAULT_BASE_URL);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path === '' ? '/v1' : path}`;
};

/** Tenant credentials as x-api-key; alt-beta only when the caller came through the alternate edge. */
export const anthropicHeaders = (request: CanonicalRequest, target: AttemptTarget, stream: boolean) => ({
  'x-api-key': target.credentials.secret,
  'anthropic-version': ANTHROPIC_VERSION,
  'content-type': 'application/json',
  accept: stream ? 'text/event-stream' : 'application/json',
  'x-svc-request-id': target.requestId,
  ...(request.preserved?.beta ? { 'anthropic-beta': request.preserved.beta } : {}),
});

const failed = (failure: AttemptFailure): { ok: false; failure: AttemptFailure } => ({ ok: false, failure });

/** A request no messages-style upstream can take as translated: 400 before any upstream call. */
const clientError = (message: string) =>
  failed({
    kind: 'Internal',
    message,
    providerMessage: message,
    retryable: false,
    fallback: false,
    surface: { status: 400, code: 'invalid_request_error' },
  });

const trouble = (message: string) =>
  failed({ kind: 'UpstreamError', message, retryable: true, fallback: true });

/** HTTP status of an error type the upstream sends in band (its documented error statuses). */
const IN_BAND_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/** An error event before any content: nothing reached the client, so it is an ordinary attempt failure. */
const earlyErrorFailure = (event: MessagesEvent): AttemptFailure => {
  const err = inBandError(event.data);
  const status = IN_BAND_STATUS[err.type] ?? 500;
  const retryable = status === 429 || status >= 500;
  return {
    kind: 'UpstreamStatus',
    status_code: status,
    message: JSON.stringify(event.data),
    providerMessage: err.message,
    providerCode: err.type,
    retryable,
    fallback: retryable || status === 401 || status === 403 || status === 404,
  };
};

const readJson = async (
  response: UpstreamResponse,
  max: number,
): Promise<{ json: unknown } | AttemptFailure> => {
  let read: { bytes: Buffer; over: boolean };
  try {
    read = await readCapped(response.body, max);
  } catch {
    return { kind: 'UpstreamError', message: 'upstream reply read failed', retryable: true, fallback: true };
  }
  if (read.over)
    return {
      kind: 'ResponseTooLarge',
      message: `upstream reply exceeded ${max} bytes`,
      retryable: false,
      fallback: true,
    };
  try {
    return { json: JSON.parse(read.bytes.toString('utf8')) as unknown };
  } catch {
    return { kind: 'UpstreamError', message: 'upstream reply was not JSON', retryable: true, fallback: true };
  }
};

const buffered = async (response: UpstreamResponse, target: AttemptTarget): Promise<AttemptOutcome> => {
  const read = await readJson(response, target.limits.maxResponseBytes);
  if (!('json' in read)) return failed(read);
  const reply = messagesReply(read.json, target.endpoint.provider_model_id);
  return reply ? { ok: true, reply } : trouble('upstream reply was not a messages reply');
};

/** Reads the first event before committing (the pipeline commits a stream at its first chunk). */
const streamed = async (response: UpstreamResponse, target: AttemptTarget): Promise<AttemptOutcome> => {
  const events = upstreamEvents(response.body, target.limits.maxResponseBytes);
  // Ends the event reader: a stream stopped before message_stop is destroyed, a finished one drained.
  const release = () => {
    void events.return(undefined);
  };
  let first: IteratorResult<MessagesEvent>;
  try {
    first = await events.next();
  } catch (err) {
    release();
    return trouble(err instanceof Error ? err.message : 'upstream stream failed');
  }
  if (first.done) {
    release();
    return trouble('upstream stream ended before any event');
  }
  if (first.value.type === 'error') {
    release();
    return failed(earlyErrorFailure(first.value));
  }
  return { ok: true, stream: messagesChunks(first.value, events, release) };
};

const post = (
  url: string,
  request: CanonicalRequest,
  target: AttemptTarget,
  body: unknown,
  stream: boolean,
) =>
  callUpstream({
    url,
    headers: anthropicHeaders(request, target, stream),
    body: JSON.stringify(body),
    destination: connectionOrLane(target.credentials),
    ...attemptCall(target),
  });

const countTokens = async (request: CanonicalRequest, target: AttemptTarget): Promise<CountOutcome> => {
  const built = countBody(request, target.endpoint);
  if (!built.ok) return clientError(built.message);
  const base = anthropicBaseUrl(target.credentials.baseUrl, target.endpoint.base_url);
  const called = await post(`${base}/messages/count_tokens`, request, target, built.body, false);
  if (!called.ok) return called;
  const { response } = called;
  if (response.statusCode !== 200)
    return failed(await failureFromStatus(response, target.limits.maxErrorMessageBytes));
  const read = await readJson(response, target.limits.maxResponseBytes);
  if (!('json' in read)) return failed(read);
  const tokens = isObject(read.json) ? read.json.input_tokens : undefined;
  return typeof tokens === 'number' && Number.isInteger(tokens)
    ? { ok: true, inputTokens: tokens }
    : trouble('upstream count had no integer input_tokens');
};

/**
 * The messages-style adapter (SPEC 4.1 rules 6-7, 4.2 rule 8): tenant BYOK credentials as
 * x-api-key, our own anthropic-version, the caller's anthropic-beta forwarded verbatim only here.
 */
export const anthropicAdapter: ProviderAdapter = {
  id: 'anthropic',
  chat: async (request, target): Promise<AttemptOutcome> => {
    let body: Record<string, unknown>;
    if (request.preserved) body = preservedBody(request.preserved.raw, request.stream, target.endpoint);
    else {
      const built = messagesBody(request, target.endpoint);
      if (!built.ok) return clientError(built.message);
      body = built.body;
    }
    const base = anthropicBaseUrl(target.credentials.baseUrl, target.endpoint.base_url);
    const called = await post(`${base}/messages`, request, target, body, request.stream);
    if (!called.ok) return called;
    const { response } = called;
    if (response.statusCode !== 200)
      return failed(await failureFromStatus(response, target.limits.maxErrorMessageBytes));
    return request.stream ? streamed(response, target) : buffered(response, target);
  },
  countTokens,
};
