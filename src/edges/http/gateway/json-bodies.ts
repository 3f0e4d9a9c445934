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
