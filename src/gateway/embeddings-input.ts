import { ServiceError } from '../lib/errors.js';

/**
 * SPEC 4.1 rule 4: the input forms of an embeddings request. The edge refuses a malformed input
 * once for the request, before any dispatch; the escrow hold estimates the prompt from the form.
 */

const invalid = (message: string) => new ServiceError('invalid_request_error', message, { param: 'input' });

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
    if (input === '') throw invalid('input must not be an empty string');
    return 'string';
  }
  if (!Array.isArray(input) || input.length === 0)
    throw invalid(
      'input must be a string, an array of strings, an array of token ids or an array of token-id arrays, and not empty',
    );
  if (input.every((x) => typeof x === 'string')) {
    if (input.some((x) => x === '')) throw invalid('input must not contain empty strings');
    return 'strings';
  }
  if (input.every(isTokenId)) return 'tokens';
  if (input.every((x) => Array.isArray(x) && x.length > 0 && x.every(isTokenId))) return 'token_arrays';
  throw invalid(
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
