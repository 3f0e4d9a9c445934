import type { CanonicalChunk, CanonicalReply, Usage } from '../../providers/contract.js';

/** Identity every frame of one reply carries (SPEC 4.1 rule 5: stable id, object, created, model). */
export interface ReplyIdentity {
  id: string;
  created: number;
  model: string;
  /** The gateway's request id (error frames carry it on the primary dialect). */
  requestId?: string;
}

/** Usage without the provider-internal breakdown (SPEC 4.1 rule 7). */
export const primaryUsage = (usage: Usage | null | undefined): Usage | null => {
  if (!usage) return null;
  const { breakdown: _internal, ...shown } = usage;
  return shown;
};

/**
 * Finish reasons only a messages-style upstream reports, in the primary dialect's vocabulary (the
 * canonical reply keeps them so the alternate edge can render them exactly).
 */
const primaryFinish = (reason: string | null | undefined): string | null => {
  if (reason === 'refusal') return 'content_filter';
  if (reason === 'pause_turn') return 'stop';
  return reason ?? null;
};

/** A buffered chat.completion in the primary dialect; a reference-shaped upstream's JSON is relayed. */
export const renderPrimaryReply = (reply: CanonicalReply, who: ReplyIdentity): Record<string, unknown> => {
  if (reply.raw)
    return { ...reply.raw, id: who.id, object: 'chat.completion', created: who.created, model: who.model };
  return {
    id: who.id,
    object: 'chat.completion',
    created: who.created,
    model: who.model,
    choices: [
      {
        index: 0,
        message: reply.message,
        logprobs: null,
        finish_reason: primaryFinish(reply.finishReason) ?? 'stop',
      },
    ],
    usage: primaryUsage(reply.usage),
  };
};

/** One chat.completion.chunk; `withUsage` false drops a usage the caller did not ask for. */
export const renderPrimaryChunk = (
  chunk: CanonicalChunk,
  who: ReplyIdentity,
  withUsage: boolean,
): Record<string, unknown> | null => {
  if (chunk.raw) {
    const choices = chunk.raw.choices;
    const usageOnly = Array.isArray(choices) && choices.length === 0;
    if (usageOnly && !withUsage) return null;
    const out: Record<string, unknown> = {
      ...chunk.raw,
      id: who.id,
      object: 'chat.completion.chunk',
      created: who.created,
      model: who.model,
    };
    // Left out of the JSON by being undefined: `delete` would turn every chunk into a slow
    // dictionary-mode object for the serializer.
    if (!withUsage) out.usage = undefined;
    return out;
  }
  const usage = primaryUsage(chunk.usage);
  const emptyDelta = Object.keys(chunk.delta).length === 0;
  // A block boundary or an opening usage alone has no primary-dialect representation.
  if (emptyDelta && !usage && !chunk.finishReason) return null;
  const usageOnly = usage && !chunk.finishReason && emptyDelta;
  if (usageOnly) {
    // The terminal usage chunk of the primary dialect: no choices, only when the caller asked.
    return withUsage
      ? {
          id: who.id,
          object: 'chat.completion.chunk',
          created: who.created,
          model: who.model,
          choices: [],
          usage,
        }
      : null;
  }
  return {
    id: who.id,
    object: 'chat.completion.chunk',
    created: who.created,
    model: who.model,
    choices: [
      { index: 0, delta: chunk.delta, logprobs: null, finish_reason: primaryFinish(chunk.finishReason) },
    ],
    ...(withUsage && usage ? { usage } : {}),
  };
};
