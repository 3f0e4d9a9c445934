import {
  defaultErrorFor,
  type OpenAIErrorObject,
  openAIError,
  rateLimitHeaders,
  type TokenCounts,
} from './wire.js';

export interface ToolCallSpec {
  name: string;
  /** An object is serialized compactly, the way models emit arguments; a string goes out verbatim. */
  arguments: string | Record<string, unknown>;
  id?: string;
}

/** A fault on a 200 reply, after `afterChunks` SSE frames (or half the bytes of a buffered body). */
export type StreamFault =
  | { kind: 'stall'; afterChunks: number; ms: number }
  | { kind: 'cut'; afterChunks: number }
  | { kind: 'error'; afterChunks: number; error: OpenAIErrorObject };

export interface ReplyOptions {
  /** Only requests to this path (e.g. `/v1/embeddings`) may consume the behaviour. */
  path?: string;
  /** Any other bearer key gets 401 invalid_api_key. */
  requireKey?: string;
  /** Reply text; by default the text of the last user message (or `OK` when there is none). */
  text?: string;
  /** The `model` field of the reply; by default the requested model. */
  model?: string;
  finishReason?: 'stop' | 'length' | 'content_filter';
  /** Overrides of the computed counts: prompt = ceil(bytes of messages JSON / 4), completion = words. */
  tokens?: Partial<TokenCounts>;
  /** Replaces the whole usage object verbatim, for malformed-usage cases (null or non-integer counters). */
  rawUsage?: unknown;
  toolCalls?: ToolCallSpec[];
  /** Content deltas of a streamed reply; by default one per word, at most 64. */
  chunks?: number;
  /** Fragments each streamed tool-call argument string is cut into (default 4). */
  argumentChunks?: number;
  /** Pause between SSE frames, to observe relaying chunk by chunk. */
  chunkDelayMs?: number;
  fault?: StreamFault;
  headers?: Record<string, string>;
  /** Vector size when the request names no `dimensions` (default 1536, 3072 for *-large). */
  embeddingDimensions?: number;
  /** What `GET /v1/models` lists. */
  models?: string[];
}

interface Scope {
  path?: string;
  requireKey?: string;
}

export type Behaviour = Scope &
  (
    | { kind: 'reply'; options: ReplyOptions }
    | { kind: 'status'; status: number; body: unknown; headers: Record<string, string> }
    | { kind: 'raw'; status: number; text: string; contentType: string; headers: Record<string, string> }
    | { kind: 'stall'; ms: number; then?: Behaviour }
    | { kind: 'reset' }
  );

/** Answers like the real API on every route: chat, embeddings, models, responses, 404 elsewhere. */
export const reply = (options: ReplyOptions = {}): Behaviour => ({
  kind: 'reply',
  path: options.path,
  requireKey: options.requireKey,
  options,
});

export const toolCalls = (calls: ToolCallSpec[], options: ReplyOptions = {}): Behaviour =>
  reply({ ...options, toolCalls: calls });

/**
 * An error status. A string body becomes the message of an OpenAI-shaped error; an object is sent
 * as JSON verbatim; no body gives the error the real API sends for that status.
 */
export const status = (code: number, body?: unknown, headers: Record<string, string> = {}): Behaviour => {
  const fallback = defaultErrorFor(code);
  const payload =
    body === undefined
      ? fallback
      : typeof body === 'string'
        ? openAIError(body, fallback.error.type, fallback.error.code)
        : body;
  return { kind: 'status', status: code, body: payload, headers };
};

/** 429 as the API sends it: exhausted `x-ratelimit-*` headers and, when given, `retry-after`. */
export const rateLimited = (options: { retryAfterSeconds?: number; message?: string } = {}): Behaviour =>
  status(429, options.message, {
    ...rateLimitHeaders(0),
    ...(options.retryAfterSeconds === undefined ? {} : { 'retry-after': String(options.retryAfterSeconds) }),
  });

/** Holds the request before any header is sent, then behaves as `then` (by default: the default). */
export const stall = (ms: number, then?: Behaviour): Behaviour => ({ kind: 'stall', ms, then });

export const stallMidStream = (afterChunks: number, ms: number, options: ReplyOptions = {}): Behaviour =>
  reply({ ...options, fault: { kind: 'stall', afterChunks, ms } });

/** Destroys the socket after some frames: no further bytes, no chunked terminator, no `[DONE]`. */
export const cutStream = (afterChunks: number, options: ReplyOptions = {}): Behaviour =>
  reply({ ...options, fault: { kind: 'cut', afterChunks } });

/** A 200 stream that turns into `data: {"error": {...}}` and ends without `[DONE]`. */
export const inBandError = (
  afterChunks: number,
  error: OpenAIErrorObject = openAIError(
    'The server had an error while processing your request.',
    'server_error',
  ).error,
  options: ReplyOptions = {},
): Behaviour => reply({ ...options, fault: { kind: 'error', afterChunks, error } });

/**
 * A body larger than `bytes`: with an error status, an OpenAI-shaped error with a long message;
 * with 200 (the default), a chat or responses reply whose text alone is that long.
 */
export const oversized = (bytes: number, options: ReplyOptions & { status?: number } = {}): Behaviour => {
  const filler = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(bytes / 27) + 1).trimEnd();
  const { status: code = 200, ...replyOptions } = options;
  if (code >= 400) return { ...status(code, filler), path: options.path };
  return reply({ chunks: 64, ...replyOptions, text: filler });
};

/** Resets the connection before any response byte. */
export const reset = (): Behaviour => ({ kind: 'reset' });

/** A non-JSON body, e.g. the HTML page a CDN answers with on 502. */
export const rawBody = (
  code: number,
  text: string,
  contentType = 'text/plain; charset=utf-8',
  headers: Record<string, string> = {},
): Behaviour => ({ kind: 'raw', status: code, text, contentType, headers });

/** Restricts any behaviour to one path; others requests pass it by and keep it queued. */
export const onPath = (path: string, behaviour: Behaviour): Behaviour => ({ ...behaviour, path });

export const withKey = (requireKey: string, behaviour: Behaviour): Behaviour => ({
  ...behaviour,
  requireKey,
});
