import { embeddingsInputForm } from '../../../gateway/embeddings-input.js';
import type { CanonicalRequest } from '../../../providers/contract.js';
import { invalid, modelOf, objectBody, outputLimit } from './body-rules.js';

/**
 * The bodies of the primary dialect's JSON operations (SPEC 4.1: embeddings, responses). The gateway
 * reads what selection, escrow and pricing need and keeps the parsed body in `raw` for the upstream
 * (STYLE.md rule 3); only request-global malformations are refused here, before any dispatch.
 */

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

/** The model the moderations API uses when a request names none. */
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

/**
 * Moderations (SPEC 4.1): `input` a string, an array of strings, or an array of text and image_url
 * parts; `model` optional as in the OpenAI API. The parts themselves are the upstream's to judge.
 */
export const parseModerationsBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  if (raw.model === undefined || raw.model === null) raw.model = DEFAULT_MODERATION_MODEL;
  const model = modelOf(raw);
  const input = raw.input;
  const valid =
    typeof input === 'string' ||
    (Array.isArray(input) &&
      input.length > 0 &&
      (input.every((i) => typeof i === 'string') ||
        input.every((i) => i !== null && typeof i === 'object' && !Array.isArray(i))));
  if (!valid)
    throw invalid(
      'input',
      'input must be a string, an array of strings, or an array of text and image_url parts',
    );
  return {
    operation: 'moderations',
    route: '/v1/moderations',
    model,
    messages: [],
    stream: false,
    includeUsage: false,
    raw,
  };
};

/**
 * `partial_images` (OpenAI images API): how many partial images a stream sends, 0 to 3; a JSON
 * number, or the digits of a multipart text field.
 */
export const checkPartialImages = (value: unknown, form: 'json' | 'multipart' = 'json'): void => {
  if (value === undefined) return;
  const n = form === 'multipart' && typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (!(typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 3))
    throw invalid('partial_images', 'partial_images must be an integer from 0 to 3');
};

/** The model the images API uses when a request names none. */
export const DEFAULT_IMAGE_MODEL = 'dall-e-2';

/**
 * Image generation (SPEC 4.1): `prompt` required, `model` optional as in the OpenAI API, `n` from 1
 * to 10, `stream` a boolean (partial images where the model streams them); sizes, formats and
 * qualities are the upstream's to judge.
 */
export const parseImageGenerationBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  if (raw.model === undefined || raw.model === null) raw.model = DEFAULT_IMAGE_MODEL;
  const model = modelOf(raw);
  if (typeof raw.prompt !== 'string' || raw.prompt === '')
    throw invalid('prompt', 'prompt must be a non-empty string');
  const n = raw.n;
  if (n !== undefined && n !== null && !(typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 10))
    throw invalid('n', 'n must be an integer from 1 to 10');
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== 'boolean')
    throw invalid('stream', 'stream must be a boolean');
  checkPartialImages(raw.partial_images === null ? undefined : raw.partial_images);
  if (raw.user !== undefined && raw.user !== null && typeof raw.user !== 'string')
    throw invalid('user', 'user must be a string');
  return {
    operation: 'images',
    route: '/v1/images/generations',
    model,
    messages: [],
    stream: raw.stream === true,
    includeUsage: false,
    ...(typeof n === 'number' ? { n } : {}),
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};

export const parseResponsesBody = (body: unknown): CanonicalRequest => {
  const raw = objectBody(body);
  const model = modelOf(raw);
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== 'boolean')
    throw invalid('stream', 'stream must be a boolean');
  const max = outputLimit(raw, 'max_output_tokens');
  return {
    operation: 'responses',
    route: '/v1/responses',
    model,
    messages: [],
    stream: raw.stream === true,
    includeUsage: false,
    ...(max !== undefined ? { maxTokens: max } : {}),
    // Read for the route rule on paid hosted tools (SPEC 4.1 rule 8); forwarded as they came.
    ...(raw.tools !== undefined ? { tools: raw.tools } : {}),
    ...(typeof raw.user === 'string' ? { endUserId: raw.user } : {}),
    raw,
  };
};
