import { ERROR_CATALOGUE, type ServiceError } from '../../lib/errors.js';
import { parseNested } from '../../lib/json-depth.js';
import type { CanonicalReply, FinishReason, ReplyBlock, Usage } from '../../providers/contract.js';
import type { ReplyIdentity } from './primary.js';

/** Tiers the primary wire names for what the alternate wire calls standard (and leaves unsaid). */
const STANDARD_TIERS = new Set(['standard', 'default', 'auto']);

/**
 * The one usage serializer of the alternate dialect, for buffered replies and for every stream
 * frame (SPEC 4.2 rule 4): input_tokens excludes both cache classes; the tier breakdown, a
 * non-standard service tier, server-tool counts that ran and thinking tokens appear when known.
 */
export const altUsage = (usage: Usage | null | undefined, serviceTier?: unknown): Record<string, unknown> => {
  const prompt = usage?.prompt_tokens ?? 0;
  const read = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  const write = usage?.prompt_tokens_details?.cache_write_tokens ?? 0;
  const thinking = usage?.completion_tokens_details?.reasoning_tokens;
  const breakdown = usage?.breakdown;
  return {
    input_tokens: Math.max(0, prompt - read - write),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    ...(breakdown?.cache_creation ? { cache_creation: breakdown.cache_creation } : {}),
    ...(typeof serviceTier === 'string' && !STANDARD_TIERS.has(serviceTier)
      ? { service_tier: serviceTier }
      : {}),
    ...(breakdown?.server_tool_use ? { server_tool_use: breakdown.server_tool_use } : {}),
    ...(typeof thinking === 'number' ? { output_tokens_details: { thinking_tokens: thinking } } : {}),
  };
};

/** The input side of a usage: what message_start states (output_tokens 0 until message_delta). */
export const inputSide = (usage: Usage | null | undefined): Usage => ({
  prompt_tokens: usage?.prompt_tokens ?? 0,
  completion_tokens: 0,
  total_tokens: usage?.prompt_tokens ?? 0,
  ...(usage?.prompt_tokens_details ? { prompt_tokens_details: usage.prompt_tokens_details } : {}),
  ...(usage?.breakdown?.cache_creation
    ? { breakdown: { cache_creation: usage.breakdown.cache_creation } }
    : {}),
});

/** SPEC 4.2 rule 3 stop-reason mapping; content_filter and anything unrecognized end the turn. */
export const altStopReason = (
  finish: FinishReason | null | undefined,
  stopSequence?: string | null,
): string => {
  if (stopSequence) return 'stop_sequence';
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'pause_turn':
    case 'refusal':
      return finish;
    default:
      return 'end_turn';
  }
};

export const parsedArguments = (args: string | undefined): unknown => {
  const input = parseNested(args || '{}');
  return input.ok ? input.value : {};
};

/**
 * Content blocks of a reply: a messages-style upstream's own blocks in order; otherwise built from
 * the message. Thinking text without a signature (a non-messages-style upstream) has no buffered
 * representation (SPEC 4.2 rule 6).
 */
export const altBlocks = (reply: CanonicalReply): ReplyBlock[] => {
  if (reply.blocks) return reply.blocks;
  const m = reply.message;
  const out: ReplyBlock[] = [];
  if (m.reasoning_content !== undefined && m.reasoning_signature)
    out.push({ type: 'thinking', thinking: m.reasoning_content, signature: m.reasoning_signature });
  const text =
    typeof m.content === 'string'
      ? m.content
      : Array.isArray(m.content)
        ? m.content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
        : '';
  if (text !== '') out.push({ type: 'text', text });
  for (const call of m.tool_calls ?? [])
    out.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parsedArguments(call.function.arguments),
    });
  return out;
};

/** A buffered reply as a messages-style message (SPEC 4.2 rule 3), whichever provider served it. */
export const renderAltReply = (reply: CanonicalReply, who: ReplyIdentity): Record<string, unknown> => ({
  id: who.id,
  type: 'message',
  role: 'assistant',
  model: who.model,
  content: altBlocks(reply),
  stop_reason: altStopReason(reply.finishReason, reply.stopSequence),
  stop_sequence: reply.stopSequence ?? null,
  usage: altUsage(reply.usage, reply.serviceTier ?? reply.raw?.service_tier),
});

/**
 * SPEC 7.2: type error and an error object with type and message; several failed attempts go under
 * error.svc.attempts, never a bare error.attempts; the request id is a header only.
 */
export const renderAltErrorEnvelope = (err: ServiceError): Record<string, unknown> => {
  const attempts = err.details?.attempts;
  return {
    type: 'error',
    error: {
      type: ERROR_CATALOGUE[err.code].altType,
      message: err.message,
      ...(Array.isArray(attempts) ? { svc: { attempts } } : {}),
    },
  };
};
