import { Agent, type Dispatcher, request, errors as undiciErrors } from 'undici';
import { HOP_HEADER } from '../lib/hop.js';
import { isCorrelationId } from '../lib/ids.js';
import { type SseEvent, SseParser } from '../lib/sse.js';
import {
  AGENT_OPTIONS,
  type Destination,
  DestinationRefused,
  guardedAgent,
  outboundHop,
  processPolicy,
} from './destinations.js';
import { type AttemptFailure, type AttemptTarget, StreamFailure, type UpstreamHeaders } from './provider.js';

/**
 * One keep-alive pool per upstream origin (undici's Agent keeps them), shared by every adapter.
 * Upstream calls never go through the global fetch: pools, timeouts and body limits stay explicit.
 * Origins a tenant chose go through their own pool, whose connections are checked on the address
 * dialled (providers/destinations.ts).
 */
const upstreamAgent = new Agent(AGENT_OPTIONS);
const tenantAgent = guardedAgent(processPolicy);

/** The pool for an origin: the operator's pass as SPEC 4.7 says, a tenant's are checked. */
export const agentFor = (destination: Destination): Dispatcher =>
  destination === 'tenant' ? tenantAgent : upstreamAgent;

/**
 * The request headers with this deployment's hop mark added (lib/hop.ts), when it has one. The mark
 * leads: a literal that opens with a spread and adds a field after it takes V8's slow path (about
 * 2 µs on this machine, on every upstream call).
 */
export const withHop = (headers: Record<string, string>): Record<string, string> => {
  const hop = outboundHop();
  return hop === null ? headers : { [HOP_HEADER]: hop, ...headers };
};

export type UpstreamResponse = Awaited<ReturnType<typeof request>>;

export type CallResult = { ok: true; response: UpstreamResponse } | { ok: false; failure: AttemptFailure };

const TRUNCATION_MARK = '… (truncated by the service)';

/** Reads a body up to `max` bytes; `over` tells that more was there (the rest is discarded). */
export const readCapped = async (body: AsyncIterable<Uint8Array> & { destroy?: () => void }, max: number) => {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    // undici hands out Buffers already: no copy per chunk, and none at the end for a one-chunk body.
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    if (size + buf.length > max) {
      parts.push(buf.subarray(0, max - size));
      size = max;
      body.destroy?.();
      return { bytes: Buffer.concat(parts, size), over: true };
    }
    parts.push(buf);
    size += buf.length;
  }
  return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), over: false };
};

/** SPEC 7.3: verbatim up to the cap, then cut on a character boundary and marked. */
export const cappedMessage = (bytes: Buffer, over: boolean): string => {
  const text = bytes.toString('utf8');
  if (!over) return text;
  // A cut inside a multi-byte character decodes to U+FFFD at the end: drop it.
  return `${text.replace(/\uFFFD+$/, '')}${TRUNCATION_MARK}`;
};

const providerError = (text: string): { message?: string; code?: string; param?: string } => {
  try {
    const parsed = JSON.parse(text) as {
      error?: { message?: unknown; code?: unknown; type?: unknown; param?: unknown } | string;
      message?: unknown;
    };
    const e = parsed.error;
    if (typeof e === 'string') return { message: e };
    const message =
      typeof e?.message === 'string'
        ? e.message
        : typeof parsed.message === 'string'
          ? parsed.message
          : undefined;
    const code = typeof e?.code === 'string' ? e.code : typeof e?.type === 'string' ? e.type : undefined;
    const param = typeof e?.param === 'string' ? e.param : undefined;
    return { message, code, param };
  } catch {
    return {};
  }
};

const headerValue = (headers: UpstreamHeaders, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The request-id headers of the providers, in the order they are looked for. */
const UPSTREAM_REQUEST_ID_HEADERS = ['x-request-id', 'request-id', 'x-amzn-requestid', 'apim-request-id'];

/** The id the upstream gave its answer (OpenAI, Anthropic, Bedrock, Azure spell it differently). */
export const upstreamRequestIdOf = (headers: UpstreamHeaders): string | null => {
  for (const name of UPSTREAM_REQUEST_ID_HEADERS) {
    const v = headerValue(headers, name);
    if (isCorrelationId(v)) return v;
  }
  return null;
};

/** The longest wait an upstream's Retry-After is taken at (longer ones are a reason to fall back). */
export const RETRY_AFTER_MAX_MS = 60_000;

/**
 * An upstream's Retry-After in milliseconds: `retry-after-ms` (OpenAI's), else `retry-after` as
 * delta-seconds or an HTTP-date (RFC 9110 10.2.3); undefined when absent or unreadable.
 */
export const retryAfterMsOf = (headers: UpstreamHeaders, now = Date.now()): number | undefined => {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const after = headerValue(headers, 'retry-after')?.trim();
  if (after === undefined || after === '') return undefined;
  if (/^\d+$/.test(after)) return Number(after) * 1_000;
  // An HTTP-date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`); Date.parse alone takes `-1`.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(after)) return undefined;
  const at = Date.parse(after);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
};

/**
 * What every attempt's upstream call takes from its target: the client's signal, the attempt's time
 * (to the headers, and for a buffered body to its end) and the hook that hears the headers.
 */
export const attemptCall = (target: Pick<AttemptTarget, 'signal' | 'timeoutMs' | 'onHeaders'>) => ({
  signal: target.signal,
  timeoutMs: target.timeoutMs,
  bodyTimeoutMs: target.timeoutMs,
  onHeaders: target.onHeaders,
});

/** Classifies an upstream status (SPEC 7.3: 429 and 5xx retryable; auth and not-found fall forward). */
export const failureFromStatus = async (
  response: UpstreamResponse,
  maxMessageBytes: number,
): Promise<AttemptFailure> => {
  const { bytes, over } = await readCapped(response.body, maxMessageBytes).catch(() => ({
    bytes: Buffer.alloc(0),
    over: false,
  }));
  const message = cappedMessage(bytes, over);
  const status = response.statusCode;
  const parsed = over ? {} : providerError(message);
  const retryable = status === 429 || status === 408 || status >= 500;
  const fallback = retryable || status === 401 || status === 403 || status === 404;
  const retryAfterMs = retryable ? retryAfterMsOf(response.headers) : undefined;
  return {
    kind: 'UpstreamStatus',
    status_code: status,
    message,
    ...(parsed.message !== undefined ? { providerMessage: parsed.message } : {}),
    ...(parsed.code !== undefined ? { providerCode: parsed.code } : {}),
    ...(parsed.param !== undefined ? { providerParam: parsed.param } : {}),
    retryable,
    fallback,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
};

/** Transport failures get a fixed category: the raw error would embed the upstream URL (SPEC 7.3). */
export const transportFailure = (err: unknown, aborted: 'client' | 'deadline' | null): AttemptFailure => {
  // Not worth a retry: the same origin resolves the same way. Another candidate may still serve.
  if (err instanceof DestinationRefused)
    return { kind: 'UpstreamError', message: err.message, retryable: false, fallback: true };
  if (
    aborted === 'deadline' ||
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError
  ) {
    return { kind: 'Timeout', message: 'upstream did not answer in time', retryable: true, fallback: true };
  }
  if (aborted === 'client')
    return {
      kind: 'UpstreamError',
      message: 'request cancelled by the client',
      retryable: false,
      fallback: false,
    };
  return { kind: 'UpstreamError', message: 'upstream connection failed', retryable: true, fallback: true };
};

/**
 * One upstream call. The attempt's time limit holds from the moment the call is made until the
 * answer starts, including time spent queued for a pooled connection and connecting: undici's
 * `headersTimeout` only starts on a connected socket, and an abort signal does not reach a request
 * still queued in a pool (undici applies it once the request is dispatched). So the call settles
 * on its own timer or the caller's signal whatever undici is doing, and the controller cancels the
 * request whenever undici gets to it. Once headers arrive, `bodyTimeout` bounds the wait between
 * body chunks and the caller's signal still cancels the body. One controller and one timer per
 * attempt; no AbortSignal.any.
 */
export const callUpstream = (options: {
  url: string;
  headers: Record<string, string>;
  /** Sent as is; a Buffer may be sent again by a later attempt (it is never consumed). */
  body: string | Buffer;
  signal: AbortSignal;
  timeoutMs: number;
  /** Time allowed between body chunks once headers arrived (streams stay open for long). */
  bodyTimeoutMs: number;
  /** Whose choice the origin is: a tenant's is checked on the address dialled. Default operator. */
  destination?: Destination;
  /** The connection pool; the one for `destination` unless a test brings its own. */
  dispatcher?: Dispatcher;
  /** Told the response headers when they arrive in time (AttemptTarget.onHeaders). */
  onHeaders?: (headers: UpstreamHeaders) => void;
}): Promise<CallResult> => {
  if (options.signal.aborted)
    return Promise.resolve({ ok: false, failure: transportFailure(null, 'client') });
  return new Promise<CallResult>((resolve) => {
    const controller = new AbortController();
    let settled = false;
    const settle = (result: CallResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!result.ok) stopListening();
      resolve(result);
    };
    // A client leaving mid-body still cancels, until the body is done (read, drained, destroyed):
    // then the listener goes, or the caller's signal (one per request) would hold the whole answer
    // reachable for as long as anything holds the signal, and the collector would copy it along.
    const onClient = () => {
      controller.abort();
      settle({ ok: false, failure: transportFailure(null, 'client') });
    };
    const stopListening = () => options.signal.removeEventListener('abort', onClient);
    options.signal.addEventListener('abort', onClient, { once: true });
    const timer = setTimeout(() => {
      controller.abort();
      settle({ ok: false, failure: transportFailure(null, 'deadline') });
    }, options.timeoutMs);
    request(options.url, {
      method: 'POST',
      headers: withHop(options.headers),
      body: options.body,
      signal: controller.signal,
      dispatcher: options.dispatcher ?? agentFor(options.destination ?? 'operator'),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
    }).then(
      (response) => {
        // Headers that arrive after the attempt gave up: nobody reads this body.
        if (settled) {
          response.body.destroy();
          return;
        }
        options.onHeaders?.(response.headers);
        settle({ ok: true, response });
        response.body.on('close', stopListening);
      },
      (err: unknown) =>
        settle({ ok: false, failure: transportFailure(err, options.signal.aborted ? 'client' : null) }),
    );
  });
};

const ignore = () => {};

/** An upstream body: undici's, or any byte iterable (tests). */
export type UpstreamBody = AsyncIterable<Uint8Array | Buffer | string> & {
  iterator?: (options: { destroyOnReturn: boolean }) => AsyncIterable<Uint8Array | Buffer | string>;
  dump?: (options: { limit: number }) => Promise<void>;
  destroy?: () => void;
  on?: (event: 'error', listener: () => void) => unknown;
};

/**
 * The SSE events of an upstream stream, for every adapter (SPEC 4.1 rule 5): a read failure or the
 * size cap throws StreamFailure. `endsAt` names the event that ends the stream (`[DONE]`,
 * message_stop): it is still yielded, and what follows it is drained, not destroyed, so the
 * keep-alive connection is kept and no AbortError is built per request. A stream left before its
 * end (a failure, a client gone) is destroyed; undici reports that as an 'error' nobody must miss.
 */
export async function* sseEvents(
  body: UpstreamBody,
  maxBytes: number,
  endsAt?: (event: SseEvent) => boolean,
): AsyncGenerator<SseEvent> {
  const parser = new SseParser();
  let finished = false;
  try {
    for await (const piece of body.iterator?.({ destroyOnReturn: false }) ?? body) {
      const events = parser.push(typeof piece === 'string' ? Buffer.from(piece) : piece);
      if (parser.bytes > maxBytes)
        throw new StreamFailure('size_cap', `upstream stream exceeded ${maxBytes} bytes`);
      for (const e of events) {
        if (endsAt?.(e)) {
          finished = true;
          body.dump?.({ limit: maxBytes }).catch(ignore);
          yield e;
          return;
        }
        yield e;
      }
    }
    finished = true;
    yield* parser.end();
  } catch (err) {
    if (err instanceof StreamFailure) throw err;
    throw new StreamFailure('read', 'upstream stream read failed');
  } finally {
    if (!finished) {
      body.on?.('error', ignore);
      body.destroy?.();
    }
  }
}
