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

/** What a reference-wire upstream answered to a JSON operation, as an attempt outcome. */
export const jsonOperationOutcome = async (
  response: UpstreamResponse,
  options: {
    stream: boolean;
    limits: AttemptTarget['limits'];
    reply: (json: Record<string, unknown>) => JsonReply;
  },
): Promise<JsonOutcome> => {
  if (response.statusCode !== 200)
    return { ok: false, failure: await failureFromStatus(response, options.limits.maxErrorMessageBytes) };
  if (options.stream) return { ok: true, stream: responsesEvents(response, options.limits.maxResponseBytes) };
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

/** Responses: the upstream's Response object as it came. */
export const responsesReply = (json: Record<string, unknown>): JsonReply => ({
  body: json,
  usage: responsesUsage(json.usage),
  ...(json.service_tier !== undefined ? { serviceTier: json.service_tier } : {}),
});
