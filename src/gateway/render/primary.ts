import type { CanonicalChunk, CanonicalReply, Usage } from '../contract.js';

/** Identity every frame of one reply carries (SPEC 4.1 rule 5: stable id, object, created, model). */
export interface ReplyIdentity {
  id: string;
  created: number;
  model: string;
  /** The gateway's request id (error frames carry it on the primary dialect). */
  requestId?: string;
}

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
      { index: 0, message: reply.message, logprobs: null, finish_reason: reply.finishReason ?? 'stop' },
    ],
    usage: reply.usage,
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
    if (!withUsage) delete out.usage;
    return out;
  }
  const usage: Usage | null | undefined = chunk.usage;
  const usageOnly = usage && !chunk.finishReason && Object.keys(chunk.delta).length === 0;
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
    choices: [{ index: 0, delta: chunk.delta, logprobs: null, finish_reason: chunk.finishReason ?? null }],
    ...(withUsage && usage ? { usage } : {}),
  };
};
