import type { CanonicalRequest, Usage } from '../contract.js';
import { readCapped, type UpstreamResponse } from '../http.js';
import {
  type AttemptFailure,
  type AttemptTarget,
  type JsonOutcome,
  unsupportedOperation,
} from '../provider.js';
import type { ManagedRuntimeAdapter } from './origin.js';

/**
 * Text embeddings on the managed runtime (SPEC 4.1 rule 4): the text-embedding
 * family through the invoke operation, one call per input. The first call runs alone and fails like
 * any attempt (retry and fallback apply); once a call has completed the outcome is terminal: a later
 * failure is not replayed anywhere, and the usage of every call that succeeded is charged once.
 */

/** Inputs in flight at once after the first call succeeded. */
const FAN_OUT = 4;

/** Titan text embeddings (`amazon.titan-embed-text-v1`, `-v2:0`), also behind a regional profile prefix. */
export const isTextEmbeddingModel = (providerModelId: string): boolean =>
  /^(?:[a-z]{2,4}\.)?amazon\.titan-embed-text-/.test(providerModelId);

export type EmbeddingsTranslation =
  | { ok: true; bodies: string[] }
  | { ok: false; unsupported: true; message: string }
  | { ok: false; unsupported: false; message: string; param: string };

/** The invoke bodies, one per input, or why this candidate cannot take the request. */
export const translateEmbeddings = (
  raw: Record<string, unknown>,
  providerModelId: string,
): EmbeddingsTranslation => {
  if (!isTextEmbeddingModel(providerModelId))
    return { ok: false, unsupported: true, message: `embeddings for ${providerModelId}` };
  const format = raw.encoding_format;
  if (format !== undefined && format !== null && format !== 'float') {
    return {
      ok: false,
      unsupported: false,
      param: 'encoding_format',
      message: `encoding_format ${JSON.stringify(format)} is not supported by the managed runtime's text embeddings; only float is`,
    };
  }
  const { input } = raw;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (texts.length === 0 || !texts.every((t): t is string => typeof t === 'string')) {
    return {
      ok: false,
      unsupported: false,
      param: 'input',
      message:
        "token-id input is not supported by the managed runtime's text embeddings; send a string or an array of strings",
    };
  }
  const dimensions = typeof raw.dimensions === 'number' ? { dimensions: raw.dimensions } : {};
  return { ok: true, bodies: texts.map((inputText) => JSON.stringify({ inputText, ...dimensions })) };
};

export interface InvokedEmbedding {
  embedding: number[];
  tokens: number;
}

/** A Titan invoke reply `{embedding, inputTextTokenCount}`, or undefined when it is not one. */
export const invokeReply = (json: unknown): InvokedEmbedding | undefined => {
  if (!json || typeof json !== 'object') return undefined;
  const { embedding, inputTextTokenCount } = json as { embedding?: unknown; inputTextTokenCount?: unknown };
  if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === 'number')) return undefined;
  const tokens =
    typeof inputTextTokenCount === 'number' &&
    Number.isSafeInteger(inputTextTokenCount) &&
    inputTextTokenCount >= 0
      ? inputTextTokenCount
      : 0;
  return { embedding: embedding as number[], tokens };
};

export const embeddingsUsageOf = (done: readonly (InvokedEmbedding | undefined)[]): Usage => {
  const tokens = done.reduce((sum, d) => sum + (d?.tokens ?? 0), 0);
  return { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens };
};

/** The primary dialect's embeddings list, with the catalog model name. */
export const embeddingsList = (
  results: readonly InvokedEmbedding[],
  model: string,
): Record<string, unknown> => {
  const usage = embeddingsUsageOf(results);
  return {
    object: 'list',
    data: results.map((r, index) => ({ object: 'embedding', index, embedding: r.embedding })),
    model,
    usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.total_tokens },
  };
};

export type InvokeOutcome = { ok: true; value: InvokedEmbedding } | { ok: false; failure: AttemptFailure };

const deadlinePassed: AttemptFailure = {
  kind: 'Timeout',
  message: 'upstream did not answer in time',
  retryable: true,
  fallback: true,
};

/**
 * Runs one invoke per input: the first alone, the rest at most FAN_OUT at a time, no new call once
 * one failed. The attempt has one deadline, `timeoutMs` from the start: each call gets only what
 * remains of it, and none starts once it passed. A failure before anything completed is returned as
 * it is; after that it becomes terminal and carries the usage of the calls that succeeded
 * (including those still in flight).
 */
export const fanOut = async (
  count: number,
  invokeOne: (index: number, remainingMs: number) => Promise<InvokeOutcome>,
  options: { timeoutMs: number; now?: () => number },
): Promise<{ ok: true; results: InvokedEmbedding[] } | { ok: false; failure: AttemptFailure }> => {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const results: (InvokedEmbedding | undefined)[] = new Array(count);
  const first = await invokeOne(0, options.timeoutMs);
  if (!first.ok) return first;
  results[0] = first.value;
  let next = 1;
  let failed: { index: number; failure: AttemptFailure } | undefined;
  const worker = async () => {
    while (failed === undefined && next < count) {
      const index = next++;
      const remaining = deadline - now();
      if (remaining <= 0) {
        failed ??= { index, failure: deadlinePassed };
        break;
      }
      const out = await invokeOne(index, remaining);
      if (out.ok) results[index] = out.value;
      else failed ??= { index, failure: out.failure };
    }
  };
  await Promise.all(Array.from({ length: Math.min(FAN_OUT, count - 1) }, worker));
  if (failed === undefined) return { ok: true, results: results as InvokedEmbedding[] };
  const completed = results.filter((r) => r !== undefined).length;
  const { index, failure } = failed;
  const why = `input ${index} failed after ${completed} of ${count} embeddings completed; their usage is charged and nothing is replayed`;
  return {
    ok: false,
    failure: {
      ...failure,
      message: `${failure.message} (${why})`,
      providerMessage: `${failure.providerMessage ?? failure.message} (${why})`,
      retryable: false,
      fallback: false,
      skipRetry: false,
      consumed: embeddingsUsageOf(results),
    },
  };
};

const upstreamTrouble = (message: string): AttemptFailure => ({
  kind: 'UpstreamError',
  message,
  retryable: true,
  fallback: true,
});

const readInvokeReply = async (response: UpstreamResponse, target: AttemptTarget): Promise<InvokeOutcome> => {
  let read: { bytes: Buffer; over: boolean };
  try {
    read = await readCapped(response.body, target.limits.maxResponseBytes);
  } catch {
    return { ok: false, failure: upstreamTrouble('upstream reply read failed') };
  }
  if (read.over)
    return {
      ok: false,
      failure: {
        kind: 'ResponseTooLarge',
        message: `upstream reply exceeded ${target.limits.maxResponseBytes} bytes`,
        retryable: false,
        fallback: true,
      },
    };
  let json: unknown;
  try {
    json = JSON.parse(read.bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  const value = invokeReply(json);
  return value
    ? { ok: true, value }
    : { ok: false, failure: upstreamTrouble('upstream reply was not an embedding') };
};

/** The adapter's embeddings operation, given how to send one signed invoke body. */
export const runtimeEmbeddings = async (
  adapter: ManagedRuntimeAdapter,
  request: CanonicalRequest,
  target: AttemptTarget,
  /** Sends one body with the time left for it. */
  invoke: (
    body: string,
    timeoutMs: number,
  ) => Promise<{ ok: true; response: UpstreamResponse } | { ok: false; failure: AttemptFailure }>,
): Promise<JsonOutcome> => {
  const translated = translateEmbeddings(request.raw, target.endpoint.provider_model_id);
  if (!translated.ok) {
    if (translated.unsupported)
      return { ok: false, failure: unsupportedOperation(adapter, translated.message) };
    // Candidate-specific: another compatible endpoint may still take the request (SPEC 4.1 rule 4).
    return {
      ok: false,
      failure: {
        kind: 'Internal',
        message: translated.message,
        providerMessage: translated.message,
        retryable: false,
        fallback: true,
        surface: { status: 400, code: 'invalid_request_error', param: translated.param },
      },
    };
  }
  const { bodies } = translated;
  const done = await fanOut(
    bodies.length,
    async (index, remainingMs) => {
      const called = await invoke(bodies[index]!, remainingMs);
      return called.ok ? readInvokeReply(called.response, target) : called;
    },
    { timeoutMs: target.timeoutMs },
  );
  if (!done.ok) return done;
  return {
    ok: true,
    reply: {
      body: embeddingsList(done.results, target.endpoint.model),
      usage: embeddingsUsageOf(done.results),
    },
  };
};
