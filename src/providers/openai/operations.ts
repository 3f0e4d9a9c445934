import type { Usage } from '../contract.js';
import { failureFromStatus, readCapped, sseEvents, type UpstreamResponse } from '../http.js';
import {
  type AttemptFailure,
  type AttemptTarget,
  type JsonOutcome,
  type JsonReply,
  type RelayedEvent,
  StreamFailure,
} from '../provider.js';

/**
 * The reference wire's JSON operations (SPEC 4.1: embeddings, responses), shared by every adapter
 * whose upstream answers in that wire (openai, azure): the body read under the size cap, the
 * usage each operation reports, and the Responses event stream relayed event by event.
 */

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Embeddings usage `{prompt_tokens, total_tokens}`: input only, values passed as sent like chat's
 * usage, so the pricing engine judges them (SPEC 4.1 rule 10) rather than pricing a bad count as 0.
 */
export const embeddingsUsage = (u: unknown): Usage | null => {
  if (!isRecord(u)) return null;
  return {
    prompt_tokens: u.prompt_tokens as number,
    completion_tokens: 0,
    total_tokens: (u.total_tokens ?? u.prompt_tokens) as number,
  };
};

/**
 * Responses usage in the chat usage shape: input and output tokens, cached input, and the reasoning
 * share of the output (attribution only, SPEC 4.1 rule 9). Fields are renamed, values passed as sent,
 * like chat's usage: the pricing engine judges them (SPEC 4.1 rule 10), so a null or unreadable
 * counter fails billing rather than being priced as 0.
 */
export const responsesUsage = (u: unknown): Usage | null => {
  if (!isRecord(u)) return null;
  const { input_tokens_details: inputDetails, output_tokens_details: outputDetails } = u;
  return {
    prompt_tokens: u.input_tokens as number,
    completion_tokens: u.output_tokens as number,
    total_tokens: u.total_tokens as number,
    ...(isRecord(inputDetails)
      ? { prompt_tokens_details: inputDetails as NonNullable<Usage['prompt_tokens_details']> }
      : {}),
    ...(isRecord(outputDetails)
      ? { completion_tokens_details: outputDetails as NonNullable<Usage['completion_tokens_details']> }
      : {}),
  };
};

/** A 200 body read under the size cap and parsed, or the attempt failure it amounts to. */
export const readJsonBody = async (
  response: UpstreamResponse,
  limits: AttemptTarget['limits'],
): Promise<{ ok: true; json: Record<string, unknown> } | { ok: false; failure: AttemptFailure }> => {
  let read: { bytes: Buffer; over: boolean };
  try {
    read = await readCapped(response.body, limits.maxResponseBytes);
  } catch {
    return {
      ok: false,
      failure: {
        kind: 'UpstreamError',
        message: 'upstream reply read failed',
        retryable: true,
        fallback: true,
      },
    };
  }
  if (read.over) {
    return {
      ok: false,
      failure: {
        kind: 'ResponseTooLarge',
        message: `upstream reply exceeded ${limits.maxResponseBytes} bytes`,
        retryable: false,
        fallback: true,
      },
    };
  }
  try {
    const json: unknown = JSON.parse(read.bytes.toString('utf8'));
    if (isRecord(json)) return { ok: true, json };
  } catch {
    // Falls through to the same failure as a non-object body.
  }
  return {
    ok: false,
    failure: {
      kind: 'UpstreamError',
      message: 'upstream reply was not JSON',
      retryable: true,
      fallback: true,
    },
  };
};

/** Events that end a Responses stream and carry the whole response (with its usage). */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * One typed SSE event of a primary-dialect operation stream (responses, images): its JSON and its
 * type (the JSON's `type`, else the SSE event name); an undecodable event or an `error` event
 * throws StreamFailure.
 */
const typedEvent = (e: {
  event: string | undefined;
  data: string;
}): { json: unknown; type: string | undefined } => {
  let json: unknown;
  try {
    json = JSON.parse(e.data);
  } catch {
    throw new StreamFailure('decode', 'upstream sent an undecodable stream event');
  }
  const type = isRecord(json) && typeof json.type === 'string' ? json.type : e.event;
  if (type === 'error') {
    const err = isRecord(json) && isRecord(json.error) ? json.error : isRecord(json) ? json : {};
    throw new StreamFailure(
      'in_band',
      typeof err.message === 'string' ? err.message : e.data,
      typeof err.code === 'string' ? err.code : undefined,
    );
  }
  return { json, type };
};

/**
 * A Responses event stream relayed as it came. Usage comes from the terminal event; an `error`
 * event, a read failure, the size cap, or an end before any terminal event throws StreamFailure.
 */
export async function* responsesEvents(
  response: UpstreamResponse,
  maxBytes: number,
): AsyncGenerator<RelayedEvent> {
  let ended = false;
  const relayed = (e: { event: string | undefined; data: string }): RelayedEvent | null => {
    if (e.data === '[DONE]') return null;
    const { json, type } = typedEvent(e);
    if (type?.endsWith('.delta') && isRecord(json) && typeof json.delta === 'string')
      return { ...e, text: json.delta };
    if (type !== undefined && TERMINAL.has(type) && isRecord(json) && isRecord(json.response)) {
      ended = true;
      const usage = responsesUsage(json.response.usage);
      const error = isRecord(json.response.error) ? json.response.error : {};
      return {
        ...e,
        ...(usage ? { usage } : {}),
        ...(type === 'response.failed'
          ? {
              failure:
                typeof error.message === 'string' ? error.message : 'upstream reported the response failed',
            }
          : {}),
        ...(json.response.service_tier !== undefined ? { serviceTier: json.response.service_tier } : {}),
      };
    }
    return e;
  };
  for await (const e of sseEvents(response.body, maxBytes)) {
    const out = relayed(e);
    if (out) yield out;
  }
  if (!ended) throw new StreamFailure('read', 'upstream stream ended before the response completed');
}

/**
 * Image usage (SPEC 4.1 rule 9): token-priced models report input tokens split into text and image
 * and output tokens that are all image tokens; others report nothing, and the images returned are
 * what per-image prices multiply.
 */
export const imagesUsage = (u: unknown, imageCount: number): Usage => {
  if (!isRecord(u))
    return {
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      images: { input_image_tokens: 0, output_image_tokens: 0, image_count: imageCount },
    };
  const details = isRecord(u.input_tokens_details) ? u.input_tokens_details : {};
  const imageIn = typeof details.image_tokens === 'number' ? details.image_tokens : 0;
  return {
    prompt_tokens: u.input_tokens as number,
    completion_tokens: u.output_tokens as number,
    total_tokens: u.total_tokens as number,
    images: {
      input_image_tokens: imageIn,
      output_image_tokens: typeof u.output_tokens === 'number' ? u.output_tokens : 0,
      image_count: imageCount,
    },
  };
};

/** An image generation's body as it came, priced on what it reports and the images it holds. */
export const imagesReply = (json: Record<string, unknown>): JsonReply => ({
  body: json,
  usage: imagesUsage(json.usage, Array.isArray(json.data) ? json.data.length : 0),
});

/**
 * An image generation stream (partial images, then one completed event per image) relayed as it
 * came; usage from the completed events, summed; an `error` event or an end before any completed
 * image throws StreamFailure.
 */
export async function* imageEvents(
  response: UpstreamResponse,
  maxBytes: number,
): AsyncGenerator<RelayedEvent> {
  let images = 0;
  let total: Usage | null = null;
  for await (const e of sseEvents(response.body, maxBytes)) {
    if (e.data === '[DONE]') continue;
    const { json, type } = typedEvent(e);
    if (type?.endsWith('.completed') && isRecord(json)) {
      images++;
      const usage = imagesUsage(json.usage, images);
      total = total
        ? {
            prompt_tokens: total.prompt_tokens + usage.prompt_tokens,
            completion_tokens: total.completion_tokens + usage.completion_tokens,
            total_tokens: total.total_tokens + usage.total_tokens,
            images: {
              input_image_tokens: total.images!.input_image_tokens + usage.images!.input_image_tokens,
              output_image_tokens: total.images!.output_image_tokens + usage.images!.output_image_tokens,
              image_count: images,
            },
          }
        : usage;
      yield { ...e, usage: total };
    } else yield e;
  }
  if (images === 0) throw new StreamFailure('read', 'upstream stream ended before any image completed');
}

/** What a reference-wire upstream answered to a JSON operation, as an attempt outcome. */
export const jsonOperationOutcome = async (
  response: UpstreamResponse,
  options: {
    stream: boolean;
    limits: AttemptTarget['limits'];
    reply: (json: Record<string, unknown>) => JsonReply;
    /** The operation's event stream (default: the Responses events). */
    events?: (response: UpstreamResponse, maxBytes: number) => AsyncGenerator<RelayedEvent>;
  },
): Promise<JsonOutcome> => {
  if (response.statusCode !== 200)
    return { ok: false, failure: await failureFromStatus(response, options.limits.maxErrorMessageBytes) };
  if (options.stream)
    return {
      ok: true,
      stream: (options.events ?? responsesEvents)(response, options.limits.maxResponseBytes),
    };
  const read = await readJsonBody(response, options.limits);
  return read.ok ? { ok: true, reply: options.reply(read.json) } : read;
};

/** Embeddings: the upstream's list with the catalog model name, priced on its input tokens. */
export const embeddingsReply =
  (model: string) =>
  (json: Record<string, unknown>): JsonReply => ({
    body: { ...json, model },
    usage: embeddingsUsage(json.usage),
  });

/**
 * Moderations: the upstream's results with the catalog model, as embeddings. The API reports no
 * usage and the operation is priced at zero (SPEC 4.1): nothing is estimated either.
 */
export const moderationsReply =
  (model: string) =>
  (json: Record<string, unknown>): JsonReply => ({
    body: { ...json, model },
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  });

/** Responses: the upstream's Response object as it came. */
export const responsesReply = (json: Record<string, unknown>): JsonReply => ({
  body: json,
  usage: responsesUsage(json.usage),
  ...(json.service_tier !== undefined ? { serviceTier: json.service_tier } : {}),
});
