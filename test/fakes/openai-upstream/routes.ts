import { createHash } from 'node:crypto';
import type { FakeFormFile } from '../openai-upstream.js';
import type { ReplyOptions } from './behaviours.js';
import {
  approximateTokens,
  bytesOf,
  chatUsage,
  countWords,
  embeddingVector,
  isRecord,
  lastUserText,
  modelObject,
  type OpenAIErrorObject,
  obfuscation,
  openAIError,
  randomId,
  renderError,
  renderSuccess,
  SYSTEM_FINGERPRINT,
  splitContent,
  splitEvenly,
  type TokenCounts,
  vectorToBase64,
} from './wire.js';

/** What a route answers before faults and pacing are applied. */
export type RouteResult =
  | { kind: 'json'; status: number; body: string }
  | { kind: 'stream'; frames: string[]; errorFrame: (error: OpenAIErrorObject) => string };

export const jsonError = (status: number, body: { error: OpenAIErrorObject }): RouteResult => ({
  kind: 'json',
  status,
  body: renderError(body),
});

const ok = (body: unknown): RouteResult => ({ kind: 'json', status: 200, body: renderSuccess(body) });

export const missingModel = (): RouteResult =>
  jsonError(400, openAIError('you must provide a model parameter'));

export const counts = (
  computed: Partial<TokenCounts>,
  overrides: Partial<TokenCounts> = {},
): TokenCounts => ({
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
  promptAudioTokens: 0,
  completionAudioTokens: 0,
  ...computed,
  ...overrides,
});

interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export const chatCompletions = (body: Record<string, unknown>, options: ReplyOptions): RouteResult => {
  if (typeof body.model !== 'string' || body.model === '') return missingModel();
  const messages = body.messages;
  if (!Array.isArray(messages)) {
    return jsonError(
      400,
      openAIError(
        "Missing required parameter: 'messages'.",
        undefined,
        'missing_required_parameter',
        'messages',
      ),
    );
  }
  const calls: ToolCall[] = (options.toolCalls ?? []).map((call) => ({
    id: call.id ?? randomId('call_', 24),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  // Tool-call replies carry `content: null` unless text was asked for, as the real API does.
  const text = options.text ?? (calls.length > 0 ? null : lastUserText(messages) || 'OK');
  const tokens = counts(
    {
      promptTokens: approximateTokens(messages),
      completionTokens:
        countWords(text ?? '') + calls.reduce((sum, call) => sum + Math.ceil(bytesOf(call.arguments) / 4), 0),
    },
    options.tokens,
  );
  const usage = options.rawUsage === undefined ? chatUsage(tokens) : options.rawUsage;
  const finishReason = calls.length > 0 ? 'tool_calls' : (options.finishReason ?? 'stop');
  const head = {
    id: randomId('chatcmpl-', 29),
    created: Math.floor(Date.now() / 1000),
    model: options.model ?? body.model,
  };

  if (body.stream !== true) {
    const toolCalls = calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
    const message = {
      role: 'assistant',
      content: text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      refusal: null,
      annotations: [],
    };
    return ok({
      id: head.id,
      object: 'chat.completion',
      created: head.created,
      model: head.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
    });
  }

  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  const includeUsage = streamOptions.include_usage === true;
  const obfuscate = streamOptions.include_obfuscation !== false;
  const frames: string[] = [];
  // Key order and the `usage: null` on every chunk when usage was asked for match the real stream.
  const frame = (choices: unknown[], chunkUsage: unknown = null): void => {
    const chunk: Record<string, unknown> = {
      id: head.id,
      object: 'chat.completion.chunk',
      created: head.created,
      model: head.model,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices,
    };
    if (includeUsage) chunk.usage = chunkUsage;
    if (obfuscate) chunk.obfuscation = obfuscation(frames.length);
    frames.push(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  const delta = (value: Record<string, unknown>, finish: string | null = null) =>
    frame([{ index: 0, delta: value, logprobs: null, finish_reason: finish }]);

  const callHeader = (call: ToolCall, index: number) => ({
    index,
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: '' },
  });
  const firstCall = calls[0];
  if (text === null && firstCall) {
    delta({ role: 'assistant', content: null, tool_calls: [callHeader(firstCall, 0)], refusal: null });
  } else {
    delta({ role: 'assistant', content: '', refusal: null });
    for (const piece of splitContent(text ?? '', options.chunks)) delta({ content: piece });
  }
  calls.forEach((call, index) => {
    if (index > 0 || text !== null) delta({ tool_calls: [callHeader(call, index)] });
    for (const fragment of splitEvenly(call.arguments, options.argumentChunks ?? 4)) {
      if (fragment !== '') delta({ tool_calls: [{ index, function: { arguments: fragment } }] });
    }
  });
  delta({}, finishReason);
  if (includeUsage) frame([], usage);
  frames.push('data: [DONE]\n\n');
  return { kind: 'stream', frames, errorFrame: (error) => `data: ${JSON.stringify({ error })}\n\n` };
};

const isTokenArray = (value: unknown): value is number[] =>
  Array.isArray(value) && value.length > 0 && value.every((token) => Number.isInteger(token));

/** Inputs as the API accepts them: a string, strings, one token array, or token arrays. */
const embeddingInputs = (input: unknown): { key: string; tokens: number; text: boolean }[] | undefined => {
  const ofText = (text: string) => ({ key: text, tokens: Math.max(1, approximateTokens(text)), text: true });
  const ofTokens = (tokens: number[]) => ({ key: tokens.join(','), tokens: tokens.length, text: false });
  if (typeof input === 'string' && input !== '') return [ofText(input)];
  if (isTokenArray(input)) return [ofTokens(input)];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((item) => typeof item === 'string' && item !== '')) return input.map(ofText);
  if (input.every(isTokenArray)) return input.map(ofTokens);
  return undefined;
};

/**
 * A unit vector that means something, a little: every word of the text (lower-cased letters and
 * digits) adds one to a dimension chosen by its hash, over a faint component seeded by the whole
 * text. Texts sharing words point the same way, so a search ranks the chunk that shares the
 * query's words first; equal texts embed equally in every run.
 */
export const textEmbedding = (text: string, dimensions: number): Float32Array => {
  const vector = embeddingVector(text, dimensions);
  for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] ?? 0) * 0.05;
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const at = createHash('sha256').update(word).digest().readUInt32LE(0) % dimensions;
    vector[at] = (vector[at] ?? 0) + 1;
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += (vector[i] ?? 0) ** 2;
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] ?? 0) * scale;
  return vector;
};

export const embeddings = (body: Record<string, unknown>, options: ReplyOptions): RouteResult => {
  if (typeof body.model !== 'string' || body.model === '') return missingModel();
  const inputs = embeddingInputs(body.input);
  if (!inputs) {
    return jsonError(
      400,
      openAIError(
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
      ),
    );
  }
  const encoding = body.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') {
    return jsonError(
      400,
      openAIError(
        `Invalid value for 'encoding_format': '${String(encoding)}'. Supported values are: 'float' and 'base64'.`,
        undefined,
        'invalid_value',
        'encoding_format',
      ),
    );
  }
  const native = body.model.includes('large') ? 3072 : 1536;
  // As the API: an integer from 1 to the model's native size (a fuzzed 2^31 must not make the
  // fake, which runs in the test process, build a vector that size).
  if (
    body.dimensions !== undefined &&
    (typeof body.dimensions !== 'number' ||
      !Number.isInteger(body.dimensions) ||
      body.dimensions < 1 ||
      body.dimensions > native)
  ) {
    return jsonError(
      400,
      openAIError(
        `Invalid 'dimensions': expected an integer from 1 to ${native}, but got ${JSON.stringify(body.dimensions)} instead.`,
        undefined,
        'invalid_value',
        'dimensions',
      ),
    );
  }
  const dimensions =
    typeof body.dimensions === 'number' ? body.dimensions : (options.embeddingDimensions ?? native);
  const data = inputs.map((input, index) => {
    const vector = input.text ? textEmbedding(input.key, dimensions) : embeddingVector(input.key, dimensions);
    return {
      object: 'embedding',
      index,
      embedding: encoding === 'base64' ? vectorToBase64(vector) : Array.from(vector),
    };
  });
  const promptTokens = options.tokens?.promptTokens ?? inputs.reduce((sum, input) => sum + input.tokens, 0);
  const usage = options.rawUsage ?? { prompt_tokens: promptTokens, total_tokens: promptTokens };
  return ok({ object: 'list', data, model: body.model, usage });
};

export const DEFAULT_MODELS = [
  'gpt-4o-mini',
  'gpt-4o',
  'gpt-4.1',
  'gpt-4.1-mini',
  'o4-mini',
  'text-embedding-3-small',
  'text-embedding-3-large',
];

export const listModels = (options: ReplyOptions): RouteResult =>
  ok({ object: 'list', data: (options.models ?? DEFAULT_MODELS).map(modelObject) });

export const retrieveModel = (id: string, options: ReplyOptions): RouteResult =>
  (options.models ?? DEFAULT_MODELS).includes(id)
    ? ok(modelObject(id))
    : jsonError(
        404,
        openAIError(`The model '${id}' does not exist`, 'invalid_request_error', 'model_not_found', 'model'),
      );

const MODERATION_CATEGORIES = [
  'harassment',
  'harassment/threatening',
  'hate',
  'hate/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/instructions',
  'self-harm/intent',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
] as const;

/** The texts and image URLs of a moderation input, or undefined when the API would refuse it. */
const moderationInputs = (input: unknown): { text: string; images: number }[] | undefined => {
  if (typeof input === 'string') return [{ text: input, images: 0 }];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((i) => typeof i === 'string')) return input.map((text: string) => ({ text, images: 0 }));
  // Multimodal parts make one result together, as the omni models answer them.
  let text = '';
  let images = 0;
  for (const part of input) {
    if (!isRecord(part)) return undefined;
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
    else if (part.type === 'image_url' && isRecord(part.image_url) && typeof part.image_url.url === 'string')
      images++;
    else return undefined;
  }
  return [{ text, images }];
};

/**
 * `POST /v1/moderations` as the API answers: one result per input; a text mentioning "kill" is
 * flagged for violence, deterministically, so tests can tell results apart. No usage is reported.
 */
export const moderations = (body: Record<string, unknown>): RouteResult => {
  const inputs = moderationInputs(body.input);
  if (!inputs)
    return jsonError(
      400,
      openAIError(
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
      ),
    );
  const model = typeof body.model === 'string' && body.model !== '' ? body.model : 'omni-moderation-latest';
  return ok({
    id: `modr-${Math.random().toString(36).slice(2, 12)}`,
    model,
    results: inputs.map(({ text, images }) => {
      const violent = /kill/i.test(text);
      const categories = Object.fromEntries(
        MODERATION_CATEGORIES.map((c) => [c, c === 'violence' && violent]),
      );
      const scores = Object.fromEntries(
        MODERATION_CATEGORIES.map((c) => [c, c === 'violence' && violent ? 0.93 : 0.0004]),
      );
      const types = Object.fromEntries(
        MODERATION_CATEGORIES.map((c) => [
          c,
          images > 0 && c.startsWith('violence') ? ['text', 'image'] : ['text'],
        ]),
      );
      return { flagged: violent, categories, category_scores: scores, category_applied_input_types: types };
    }),
  });
};

/** A 1x1 PNG: what every fake image is. */
const PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** Output image tokens the fake reports per generated image (a 1024x1024 medium image). */
export const FAKE_IMAGE_OUTPUT_TOKENS = 1056;

/**
 * `POST /v1/images/generations` as the API answers: token-priced `gpt-image-*` models return
 * b64_json and usage (input split into text and image tokens), stream partial images then one
 * completed event per image when `stream` is true; other models (dall-e-*) return URLs or b64_json
 * as `response_format` asks, with no usage.
 */
export const imageGenerations = (body: Record<string, unknown>): RouteResult => {
  if (typeof body.prompt !== 'string' || body.prompt === '') return missing('prompt');
  return images(body, { prompt: body.prompt, inputImages: 0, events: 'image_generation' });
};

const missing = (param: string) =>
  jsonError(
    400,
    openAIError(`Missing required parameter: '${param}'.`, undefined, 'missing_required_parameter', param),
  );

const revised = (prompt: string) => (prompt ? { revised_prompt: prompt } : {});

/** Input image tokens the fake reports per image an edit is given. */
export const FAKE_IMAGE_INPUT_TOKENS = 323;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const isPng = (f: FakeFormFile) => f.bytes.subarray(0, 8).equals(PNG_SIGNATURE);

/**
 * `POST /v1/images/edits` (multipart) as the API answers: `image` (one) or `image[]` (up to 16 for
 * gpt-image models; dall-e-2 takes one PNG), an optional PNG `mask`, a `prompt`; text fields are
 * strings on the wire. Input images are reported as image tokens.
 */
export const imageEdits = (fields: Record<string, unknown>, files: readonly FakeFormFile[]): RouteResult => {
  const model = typeof fields.model === 'string' && fields.model !== '' ? fields.model : 'dall-e-2';
  const images = files.filter((f) => f.field === 'image' || f.field === 'image[]');
  const mask = files.filter((f) => f.field === 'mask');
  const other = files.find((f) => !['image', 'image[]', 'mask'].includes(f.field));
  if (other)
    return jsonError(
      400,
      openAIError(`Unknown parameter: '${other.field}'.`, undefined, 'unknown_parameter', other.field),
    );
  if (images.length === 0) return missing('image');
  if (typeof fields.prompt !== 'string' || fields.prompt === '') return missing('prompt');
  if (model.startsWith('dall-e-2') && (images.length > 1 || !isPng(images[0]!)))
    return jsonError(
      400,
      openAIError(
        'Invalid input image - format must be a single PNG for dall-e-2.',
        undefined,
        'invalid_image',
        'image',
      ),
    );
  if (mask.length > 1 || (mask[0] && !isPng(mask[0])))
    return jsonError(
      400,
      openAIError('Invalid mask image - format must be PNG.', undefined, 'invalid_image', 'mask'),
    );
  return images_(fields, model, { prompt: fields.prompt, inputImages: images.length, events: 'image_edit' });
};

/** `POST /v1/images/variations` (multipart): dall-e-2 only, one PNG `image`, no prompt. */
export const imageVariations = (
  fields: Record<string, unknown>,
  files: readonly FakeFormFile[],
): RouteResult => {
  const model = typeof fields.model === 'string' && fields.model !== '' ? fields.model : 'dall-e-2';
  if (!model.startsWith('dall-e-2'))
    return jsonError(
      400,
      openAIError(
        `Invalid model ${model}. The model argument should be left blank.`,
        undefined,
        'invalid_value',
        'model',
      ),
    );
  const image = files.filter((f) => f.field === 'image');
  if (image.length !== 1 || files.length !== 1) return missing('image');
  if (!isPng(image[0]!))
    return jsonError(
      400,
      openAIError('Invalid input image - format must be PNG.', undefined, 'invalid_image', 'image'),
    );
  return images_(fields, model, { prompt: '', inputImages: 1, events: 'image_variation' });
};

/** Multipart fields arrive as strings: n and stream read as the API reads them. */
const images_ = (
  fields: Record<string, unknown>,
  model: string,
  shape: { prompt: string; inputImages: number; events: string },
): RouteResult => {
  const n = typeof fields.n === 'string' ? Number(fields.n) : 1;
  return images(
    {
      ...fields,
      model,
      n,
      stream: fields.stream === 'true',
      ...(typeof fields.partial_images === 'string' ? { partial_images: Number(fields.partial_images) } : {}),
    },
    shape,
  );
};

const images = (
  body: Record<string, unknown>,
  shape: { prompt: string; inputImages: number; events: string },
): RouteResult => {
  const model = typeof body.model === 'string' && body.model !== '' ? body.model : 'dall-e-2';
  const n = typeof body.n === 'number' ? body.n : 1;
  const tokenPriced = model.startsWith('gpt-image');
  const textTokens = Math.max(1, Math.ceil(shape.prompt.length / 4));
  const imageTokens = FAKE_IMAGE_INPUT_TOKENS * shape.inputImages;
  const usage = {
    input_tokens: textTokens + imageTokens,
    input_tokens_details: { text_tokens: textTokens, image_tokens: imageTokens },
    output_tokens: FAKE_IMAGE_OUTPUT_TOKENS * n,
    total_tokens: textTokens + imageTokens + FAKE_IMAGE_OUTPUT_TOKENS * n,
  };
  const created = Math.floor(Date.now() / 1000);
  if (body.stream === true && tokenPriced) {
    const partials = typeof body.partial_images === 'number' ? body.partial_images : 0;
    const frames: string[] = [];
    const event = (type: string, data: Record<string, unknown>) =>
      frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    const common = {
      created_at: created,
      size: '1024x1024',
      quality: 'medium',
      background: 'opaque',
      output_format: 'png',
    };
    for (let i = 0; i < partials; i++)
      event(`${shape.events}.partial_image`, { ...common, b64_json: PIXEL_PNG, partial_image_index: i });
    event(`${shape.events}.completed`, {
      ...common,
      b64_json: PIXEL_PNG,
      usage: {
        ...usage,
        output_tokens: FAKE_IMAGE_OUTPUT_TOKENS,
        total_tokens: textTokens + imageTokens + FAKE_IMAGE_OUTPUT_TOKENS,
      },
    });
    return {
      kind: 'stream',
      frames,
      errorFrame: (error) => `event: error\ndata: ${JSON.stringify({ type: 'error', error })}\n\n`,
    };
  }
  const asUrl = !tokenPriced && body.response_format !== 'b64_json';
  const data = Array.from({ length: n }, (_, i) =>
    asUrl
      ? { url: `https://images.example.test/${created}-${i}.png`, ...revised(shape.prompt) }
      : { b64_json: PIXEL_PNG, ...(tokenPriced ? {} : revised(shape.prompt)) },
  );
  return ok({
    created,
    data,
    ...(tokenPriced ? { usage, size: '1024x1024', quality: 'medium', output_format: 'png' } : {}),
  });
};
