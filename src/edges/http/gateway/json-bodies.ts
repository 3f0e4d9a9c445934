import { ServiceError } from '../../../lib/errors.js';
import type { CanonicalRequest } from '../../../providers/contract.js';

/**
 * The bodies of the primary dialect's JSON operations (SPEC 4.1: embeddings, responses). The gateway
 * reads what selection, escrow and pricing need and keeps the parsed body in `raw` for the upstream
 * (STYLE.md rule 3); only request-global malformations are refused here, before any dispatch.
 */

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

const objectBody = (body: unknown): Record<string, unknown> => {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw invalid('body', 'the request body must be a JSON object');
  return body as Record<string, unknown>;
};

const modelOf = (raw: Record<string, unknown>): string => {
  if (typeof raw.model !== 'string' || raw.model.trim() === '')
    throw invalid('model', 'model is required and must be a string');
  return raw.model.trim();
};

const isTokenId = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;

/** Which of SPEC 4.1 rule 4's input forms a valid embeddings input takes. */
export type EmbeddingsInputForm = 'string' | 'strings' | 'tokens' | 'token_arrays';

/**
 * Classifies `input`: a non-empty string, a non-empty array of non-empty strings, a non-empty array
 * of token ids, or a non-empty array of non-empty token-id arrays. Anything else is malformed for
 * every candidate, so it is refused once for the request.
 */
export const embeddingsInputForm = (input: unknown): EmbeddingsInputForm => {
  if (typeof input === 'string') {
    if (input === '') throw invalid('input', 'input must not be an empty string');
    return 'string';
  }
  if (!Array.isArray(input) || input.length === 0)
    throw invalid(
      'input',
      'input must be a string, an array of strings, an array of token ids or an array of token-id arrays, and not empty',
    );
  if (input.every((x) => typeof x === 'string')) {
    if (input.some((x) => x === '')) throw invalid('input', 'input must not contain empty strings');
    return 'strings';
  }
  if (input.every(isTokenId)) return 'tokens';
  if (input.every((x) => Array.isArray(x) && x.length > 0 && x.every(isTokenId))) return 'token_arrays';
  throw invalid(
    'input',
    'input arrays must hold only strings, only token ids (non-negative integers) or only non-empty token-id arrays',
  );
};

const textTokens = (text: string): number => Math.ceil(Buffer.byteLength(text) / 4);

/**
 * The prompt size an embeddings input will be billed for, estimated before dispatch for the escrow
 * hold (SPEC 8): token ids are counted exactly, text at ~4 bytes a token, never less than one token.
 */
export const embeddingsPromptTokens = (input: unknown): number => {
  let tokens: number;
  switch (embeddingsInputForm(input)) {
    case 'string':
      tokens = textTokens(input as string);
      break;
    case 'strings':
      tokens = (input as string[]).reduce((sum, s) => sum + textTokens(s), 0);
      break;
    case 'tokens':
      tokens = (input as number[]).length;
      break;
    case 'token_arrays':
      tokens = (input as number[][]).reduce((sum, ids) => sum + ids.length, 0);
      break;
  }
  return Math.max(1, tokens);
};

export const parseEmbeddingsBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  const model = modelOf(raw);
  embeddingsInputForm(raw.input);
  const format = raw.encoding_format;
  if (format !== undefined && format !== null && format !== 'float' && format !== 'base64')
    throw invalid('encoding_format', "encoding_format must be 'float' or 'base64'");
  const dimensions = raw.dimensions;
  if (
    dimensions !== undefined &&
    dimensions !== null &&
    !(typeof dimensions === 'number' && Number.isSafeInteger(dimensions) && dimensions > 0)
  )
    throw invalid('dimensions', 'dimensions must be a positive integer');
  if (raw.user !== undefined && raw.user !== null && typeof raw.user !== 'string')
    throw invalid('user', 'user must be a string');
  return {
    operation: 'embeddings',
    route: '/v1/embeddings',
    model,
    messages: [],
    stream: false,
    includeUsage: false,
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};

export const parseResponsesBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  const model = modelOf(raw);
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== 'boolean')
    throw invalid('stream', 'stream must be a boolean');
  const max = raw.max_output_tokens;
  return {
    operation: 'responses',
    route: '/v1/responses',
    model,
    messages: [],
    stream: raw.stream === true,
    includeUsage: false,
    ...(typeof max === 'number' && Number.isSafeInteger(max) && max > 0 ? { maxTokens: max } : {}),
    // Read for the route rule on paid hosted tools (SPEC 4.1 rule 8); forwarded as they came.
    ...(raw.tools !== undefined ? { tools: raw.tools } : {}),
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};
