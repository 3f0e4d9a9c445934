import { createHash, randomBytes } from 'node:crypto';

/**
 * Body shapes of api.openai.com, field for field and in the same key order, so that a gateway that
 * passes bodies through (or an SDK that parses them) sees what it would see in production.
 */

export interface OpenAIErrorObject {
  message: string;
  type: string;
  param: string | null;
  code: string | number | null;
}

export interface TokenCounts {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
  promptAudioTokens: number;
  completionAudioTokens: number;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export const randomId = (prefix: string, length: number): string => {
  let id = prefix;
  for (const byte of randomBytes(length)) id += ALPHANUMERIC[byte % ALPHANUMERIC.length];
  return id;
};

export const requestId = (): string => `req_${randomBytes(16).toString('hex')}`;

export const SYSTEM_FINGERPRINT = 'fp_fake0openai';

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const openAIError = (
  message: string,
  type = 'invalid_request_error',
  code: string | number | null = null,
  param: string | null = null,
): { error: OpenAIErrorObject } => ({ error: { message, type, param, code } });

/** The error body api.openai.com (or the Cloudflare edge in front of it) answers for a status. */
export const defaultErrorFor = (status: number): { error: OpenAIErrorObject } => {
  switch (status) {
    case 400:
      return openAIError('Invalid request.', 'invalid_request_error');
    case 401:
      return openAIError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    case 403:
      return openAIError('You are not allowed to sample from this model', 'invalid_request_error');
    case 404:
      return openAIError('Not found.', 'invalid_request_error');
    case 429:
      return openAIError(
        'Rate limit reached for requests per min (RPM): Limit 10000, Used 10000, Requested 1. Please try again in 6ms.',
        'requests',
        'rate_limit_exceeded',
      );
    case 502:
      return openAIError('Bad gateway.', 'cf_bad_gateway', 502);
    case 503:
      return openAIError('The engine is currently overloaded, please try again later.', 'server_error');
    case 504:
      return openAIError('Gateway timeout.', 'cf_gateway_timeout', 504);
    default:
      return openAIError(
        'The server had an error while processing your request. Sorry about that!',
        status >= 500 ? 'server_error' : 'invalid_request_error',
      );
  }
};

// The API pretty-prints: errors with four spaces and a trailing newline, successes with two. A
// gateway that forwards bodies must not assume compact JSON.
export const renderError = (body: unknown): string => `${JSON.stringify(body, null, 4)}\n`;
export const renderSuccess = (body: unknown): string => JSON.stringify(body, null, 2);

export const rateLimitHeaders = (remainingRequests: number): Record<string, string> => ({
  'x-ratelimit-limit-requests': '10000',
  'x-ratelimit-limit-tokens': '30000000',
  'x-ratelimit-remaining-requests': String(remainingRequests),
  'x-ratelimit-remaining-tokens': remainingRequests > 0 ? '29999000' : '0',
  'x-ratelimit-reset-requests': '6ms',
  'x-ratelimit-reset-tokens': '0s',
});

export const commonHeaders = (): Record<string, string> => ({
  'x-request-id': requestId(),
  'openai-version': '2020-10-01',
  'openai-organization': 'fake-org',
  'openai-project': 'proj_fakeopenai',
  'openai-processing-ms': '1',
  'access-control-expose-headers': 'X-Request-ID',
  ...rateLimitHeaders(9999),
});

export const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');
export const approximateTokens = (value: unknown): number => Math.ceil(bytesOf(value) / 4);
export const countWords = (text: string): number => text.split(/\s+/).filter(Boolean).length;

const contentText = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
};

/** The text of the last user turn, which the default reply echoes so tests can correlate. */
export const lastUserText = (messages: readonly unknown[]): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (isRecord(message) && message.role === 'user') return contentText(message.content);
  }
  return '';
};

export const chatUsage = (counts: TokenCounts) => ({
  prompt_tokens: counts.promptTokens,
  completion_tokens: counts.completionTokens,
  total_tokens: counts.promptTokens + counts.completionTokens,
  prompt_tokens_details: { cached_tokens: counts.cachedTokens, audio_tokens: counts.promptAudioTokens },
  completion_tokens_details: {
    reasoning_tokens: counts.reasoningTokens,
    audio_tokens: counts.completionAudioTokens,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
});

/** Cuts items into `count` runs of near-equal length, in order. */
const partition = (items: readonly string[], count: number): string[] => {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const from = Math.floor((i * items.length) / count);
    out.push(items.slice(from, Math.floor(((i + 1) * items.length) / count)).join(''));
  }
  return out;
};

/** Splits on code points so no fragment carries half a surrogate pair. */
export const splitEvenly = (text: string, pieces: number): string[] => {
  const points = Array.from(text);
  return partition(points, Math.max(1, Math.min(pieces, points.length)));
};

/**
 * Content deltas the way a tokenizer cuts text: each word with its leading whitespace. More pieces
 * than words splits inside words; fewer groups neighbouring words.
 */
export const splitContent = (text: string, pieces: number | undefined): string[] => {
  if (text === '') return [];
  const words = text.match(/\s*\S+/g) ?? [text];
  const tail = text.slice(words.join('').length);
  if (tail) words[words.length - 1] = `${words.at(-1) ?? ''}${tail}`;
  const target = pieces ?? Math.min(words.length, 64);
  return target > words.length ? splitEvenly(text, target) : partition(words, Math.max(1, target));
};

/** Stands in for OpenAI's random stream padding, but stable so byte counts repeat across runs. */
export const obfuscation = (index: number): string => ALPHANUMERIC.slice(0, 1 + ((index * 7) % 15));

export const MODEL_CREATED = 1_700_000_000;

export const modelObject = (id: string) => ({
  id,
  object: 'model',
  created: MODEL_CREATED,
  owned_by: 'system',
});

/** A unit vector seeded by the input, so equal inputs embed equally in every run. */
export const embeddingVector = (input: string, dimensions: number): Float32Array => {
  const seed = createHash('sha256').update(input).digest();
  let state = seed.readUInt32LE(0) || 1;
  const vector = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const value = (state >>> 0) / 0x1_0000_0000 - 0.5;
    vector[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] ?? 0) * scale;
  return vector;
};

export const vectorToBase64 = (vector: Float32Array): string =>
  Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
