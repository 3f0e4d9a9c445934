import type { FastifyInstance, FastifyRequest } from 'fastify';

import { primaryDialect } from '../../../gateway/render/dialect.js';
import { ServiceError } from '../../../lib/errors.js';
import type { CanonicalRequest, UploadedFile } from '../../../providers/contract.js';
import { invalid } from './body-rules.js';
import { callGateway, type GatewayEdgeDeps } from './client.js';
import { checkPartialImages, DEFAULT_IMAGE_MODEL } from './json-bodies.js';
import { type MultipartLimits, multipartParts } from './multipart.js';

/**
 * POST /v1/images/edits and /v1/images/variations (SPEC 4.1): multipart forms, proxied as
 * multipart. The form is read whole (its files are held for retries and fallback), then goes through
 * the request path like an image generation: capability-gated, held, priced per image or per token.
 *
 * Limits: an edit takes up to 16 images and one mask, a variation one image; a file is at most
 * 50 MiB and the files of one request at most 64 MiB together (413 past either).
 */
export const IMAGE_FILE_MAX_BYTES = 50 * 1_048_576;
export const IMAGE_FORM_MAX_BYTES = 64 * 1_048_576;

interface FormRules {
  route: '/v1/images/edits' | '/v1/images/variations';
  /** File fields and how many of each one form may hold. */
  files: Record<string, number>;
  /** Says what a form that parsed still lacks or gets wrong. */
  check: (raw: Record<string, string>, files: UploadedFile[]) => void;
}

const EDITS: FormRules = {
  route: '/v1/images/edits',
  // The SDK sends one image as `image` and several as `image[]` (16 at most, as the API takes).
  files: { image: 16, 'image[]': 16, mask: 1 },
  check: (raw, files) => {
    if (typeof raw.prompt !== 'string' || raw.prompt === '')
      throw invalid('prompt', 'prompt must be a non-empty string');
    const images = files.filter((f) => f.field !== 'mask').length;
    if (images === 0) throw invalid('image', 'image is required: one or more image files');
    if (images > 16) throw invalid('image', 'at most 16 images in one edit');
  },
};

const VARIATIONS: FormRules = {
  route: '/v1/images/variations',
  files: { image: 1 },
  check: (raw, files) => {
    if (files.length === 0) throw invalid('image', 'image is required: one image file');
    if (raw.stream === 'true') throw invalid('stream', 'image variations are not streamed');
  },
};

const LIMITS: MultipartLimits = {
  fileBytes: IMAGE_FILE_MAX_BYTES,
  files: 17,
  fields: 32,
  fieldBytes: 64 * 1_024,
};

/** The form of an edit or variation as a canonical request; every problem a 400 or 413 naming the field. */
export const readImageForm = async (request: FastifyRequest, rules: FormRules): Promise<CanonicalRequest> => {
  const raw: Record<string, string> = {};
  const uploads: UploadedFile[] = [];
  let held = 0;
  for await (const part of multipartParts(request.multipartBody, request.headers, LIMITS)) {
    if (part.kind === 'field') {
      if (Object.hasOwn(raw, part.name))
        throw invalid(part.name, `form field ${part.name} is given more than once`);
      raw[part.name] = part.value;
      continue;
    }
    const most = rules.files[part.name];
    if (most === undefined)
      throw invalid(
        part.name,
        `unexpected file field ${JSON.stringify(part.name)}: this route takes ${Object.keys(rules.files).join(', ')}`,
      );
    if (uploads.filter((u) => u.field === part.name).length >= most)
      throw invalid(part.name, `at most ${most} file${most === 1 ? '' : 's'} in ${part.name}`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of part.bytes) {
      size += chunk.length;
      held += chunk.length;
      if (held > IMAGE_FORM_MAX_BYTES)
        throw new ServiceError(
          'payload_too_large',
          `the files of one request are at most ${IMAGE_FORM_MAX_BYTES / 1_048_576} MiB together`,
        );
      chunks.push(chunk);
    }
    if (size === 0)
      throw invalid(part.name, `file ${JSON.stringify(part.filename)} in ${part.name} is empty`);
    uploads.push({
      field: part.name,
      filename: part.filename,
      contentType: part.contentType,
      bytes: Buffer.concat(chunks, size),
    });
  }
  if (raw.model === undefined || raw.model === '') raw.model = DEFAULT_IMAGE_MODEL;
  rules.check(raw, uploads);
  const n = raw.n === undefined ? undefined : Number(raw.n);
  if (n !== undefined && !(/^\d+$/.test(raw.n!) && n >= 1 && n <= 10))
    throw invalid('n', 'n must be an integer from 1 to 10');
  if (raw.stream !== undefined && raw.stream !== 'true' && raw.stream !== 'false')
    throw invalid('stream', 'stream must be true or false');
  checkPartialImages(raw.partial_images, 'multipart');
  return {
    operation: 'images',
    route: rules.route,
    model: raw.model,
    messages: [],
    stream: raw.stream === 'true',
    includeUsage: false,
    ...(n !== undefined ? { n } : {}),
    ...(raw.user !== undefined && raw.user !== '' ? { endUserId: raw.user } : {}),
    raw,
    uploads,
  };
};

export const registerImageUploadRoutes = (scope: FastifyInstance, deps: GatewayEdgeDeps): void => {
  for (const rules of [EDITS, VARIATIONS])
    scope.post(rules.route.slice('/v1'.length), async (request, reply) =>
      callGateway(deps, request, reply, await readImageForm(request, rules), primaryDialect),
    );
};
