import type { CanonicalChunk, CanonicalReply, CanonicalRequest, ChatMessage, Usage } from '../contract.js';
import { connectionOrLane } from '../destinations.js';
import { formDataBody } from '../form-data.js';
import { attemptCall, callUpstream, failureFromStatus, sseEvents, type UpstreamResponse } from '../http.js';
import {
  type AttemptOutcome,
  type AttemptTarget,
  type JsonOutcome,
  type ProviderAdapter,
  StreamFailure,
} from '../provider.js';
import {
  embeddingsReply,
  imageEvents,
  imagesReply,
  jsonOperationOutcome,
  moderationsReply,
  readJsonBody,
  responsesReply,
} from './operations.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * The base URL of an OpenAI-compatible upstream: the connection's origin override, else the lane's
 * catalog base_url, else the public API. A bare origin means origin + /v1.
 */
export const openAiBaseUrl = (connectionBaseUrl: string | null, laneBaseUrl: string | null): string => {
  const chosen = connectionBaseUrl ?? laneBaseUrl ?? OPENAI_DEFAULT_BASE_URL;
  const url = new URL(chosen);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path === '' ? '/v1' : path}`;
};

/** The inbound body with the upstream's model id, and usage asked for on streams (SPEC 4.1 rule 5). */
export const openAiChatBody = (request: CanonicalRequest, providerModelId: string): string => {
  // `model` is always in the body the edge checked, so the spread only replaces it (fast). Fields the
  // body lacks are added to a copy made with Object.assign: a literal that opens with a spread and
  // adds a new field after it takes V8's slow path (about 1 µs a field on this machine).
  if (!request.stream) return JSON.stringify({ ...request.raw, model: providerModelId });
  const body: Record<string, unknown> = Object.assign({}, request.raw);
  body.model = providerModelId;
  const options = request.raw.stream_options;
  const streamOptions: Record<string, unknown> = Object.assign(
    {},
    options && typeof options === 'object' ? (options as Record<string, unknown>) : null,
  );
  streamOptions.include_usage = true;
  body.stream_options = streamOptions;
  return JSON.stringify(body);
};

const toUsage = (u: unknown): Usage | null => (u && typeof u === 'object' ? (u as Usage) : null);

const replyOf = (json: Record<string, unknown>): CanonicalReply => {
  const choices = Array.isArray(json.choices) ? (json.choices as Record<string, unknown>[]) : [];
  const first = choices[0] ?? {};
  return {
    id: typeof json.id === 'string' ? json.id : '',
    created: typeof json.created === 'number' ? json.created : Math.floor(Date.now() / 1000),
    model: typeof json.model === 'string' ? json.model : '',
    message: (first.message as ChatMessage | undefined) ?? { role: 'assistant', content: null },
    finishReason: typeof first.finish_reason === 'string' ? first.finish_reason : null,
    usage: toUsage(json.usage),
    raw: json,
  };
};

const chunkOf = (json: Record<string, unknown>): CanonicalChunk => {
  const choices = Array.isArray(json.choices) ? (json.choices as Record<string, unknown>[]) : [];
  const first = choices[0];
  return {
    delta: ((first?.delta as CanonicalChunk['delta'] | undefined) ?? {}) as CanonicalChunk['delta'],
    finishReason: typeof first?.finish_reason === 'string' ? first.finish_reason : null,
    usage: toUsage(json.usage),
    raw: json,
  };
};

/**
 * Upstream SSE to canonical chunks; a read failure, an in-band error or the size cap throws
 * StreamFailure. The stream ends at `[DONE]` (what follows is drained by sseEvents).
 */
async function* streamChunks(response: UpstreamResponse, maxBytes: number): AsyncGenerator<CanonicalChunk> {
  let done = false;
  for await (const e of sseEvents(response.body, maxBytes, (e) => e.data === '[DONE]')) {
    if (e.data === '[DONE]') {
      done = true;
      break;
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(e.data) as Record<string, unknown>;
    } catch {
      throw new StreamFailure('decode', 'upstream sent an undecodable stream frame');
    }
    if (json.error !== undefined) {
      const err = json.error as { message?: unknown; code?: unknown; type?: unknown };
      throw new StreamFailure(
        'in_band',
        typeof err?.message === 'string' ? err.message : JSON.stringify(json.error),
        typeof err?.code === 'string' ? err.code : undefined,
      );
    }
    yield chunkOf(json);
  }
  if (!done) throw new StreamFailure('read', 'upstream stream ended before [DONE]');
}

/**
 * What a primary-dialect upstream answered, as an attempt outcome: non-200 statuses classified, a
 * stream turned into canonical chunks, a buffered body read under the size cap and parsed. Shared by
 * every adapter whose upstream speaks the primary dialect's reply (openai, azure).
 */
export const openAiShapedOutcome = async (
  response: UpstreamResponse,
  stream: boolean,
  limits: AttemptTarget['limits'],
): Promise<AttemptOutcome> => {
  if (response.statusCode !== 200)
    return { ok: false, failure: await failureFromStatus(response, limits.maxErrorMessageBytes) };
  if (stream) return { ok: true, stream: streamChunks(response, limits.maxResponseBytes) };
  const read = await readJsonBody(response, limits);
  return read.ok ? { ok: true, reply: replyOf(read.json) } : read;
};

/** One POST to `{base}/{path}` with the connection's bearer key and the request id; a JSON body unless told. */
const post = (
  target: AttemptTarget,
  path: string,
  body: string | Buffer,
  stream: boolean,
  contentType = 'application/json',
) =>
  callUpstream({
    url: `${openAiBaseUrl(target.credentials.baseUrl, target.endpoint.base_url)}/${path}`,
    headers: {
      authorization: `Bearer ${target.credentials.secret}`,
      'content-type': contentType,
      accept: stream ? 'text/event-stream' : 'application/json',
      'x-svc-request-id': target.requestId,
    },
    body,
    destination: connectionOrLane(target.credentials),
    ...attemptCall(target),
  });

/** The inbound JSON with the upstream's model id: the other fields pass through unread. */
const withModel = (raw: Record<string, unknown>, model: string) => JSON.stringify({ ...raw, model });

/**
 * One JSON operation: the inbound body (or multipart form) with the upstream's model id POSTed to
 * `path`, its answer read as the operation's reply or event stream.
 */
const jsonOperation = async (
  request: CanonicalRequest,
  target: AttemptTarget,
  path: string,
  stream: boolean,
  shape: Pick<Parameters<typeof jsonOperationOutcome>[1], 'reply' | 'events'>,
): Promise<JsonOutcome> => {
  const model = target.endpoint.provider_model_id;
  const form = request.uploads ? formDataBody({ ...request.raw, model }, request.uploads) : null;
  const called = form
    ? await post(target, path, form.body, stream, form.contentType)
    : await post(target, path, withModel(request.raw, model), stream);
  if (!called.ok) return called;
  return jsonOperationOutcome(called.response, { stream, limits: target.limits, ...shape });
};

export const openAiAdapter: ProviderAdapter = {
  id: 'openai',
  chat: async (request, target): Promise<AttemptOutcome> => {
    const called = await post(
      target,
      'chat/completions',
      openAiChatBody(request, target.endpoint.provider_model_id),
      request.stream,
    );
    if (!called.ok) return called;
    return openAiShapedOutcome(called.response, request.stream, target.limits);
  },
  embeddings: (request, target) =>
    jsonOperation(request, target, 'embeddings', false, { reply: embeddingsReply(target.endpoint.model) }),
  images: (request, target) =>
    // Generations, edits and variations: the path is the route's; edits and variations send the
    // caller's form as it came, with the upstream's model id.
    jsonOperation(request, target, request.route.slice('/v1/'.length), request.stream, {
      reply: imagesReply,
      events: imageEvents,
    }),
  moderations: (request, target) =>
    jsonOperation(request, target, 'moderations', false, { reply: moderationsReply(target.endpoint.model) }),
  responses: (request, target) =>
    jsonOperation(request, target, 'responses', request.stream, { reply: responsesReply }),
};
