import { ServiceError } from '../../../lib/errors.js';
import type { CanonicalRequest, Route } from '../../../providers/contract.js';
import { parseChatBody } from '../gateway/chat.js';
import { internalMessages, internalSystem, isObject } from './messages.js';

const invalid = (message: string, param: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** Custom tools as function tools; server tools go through as they are, for the route rules to judge. */
const internalTools = (tools: unknown): unknown => {
  if (!Array.isArray(tools)) return tools;
  return tools.map((t) => {
    if (!isObject(t) || (t.type !== undefined && t.type !== 'custom') || typeof t.name !== 'string') return t;
    return {
      type: 'function',
      function: {
        name: t.name,
        ...(typeof t.description === 'string' ? { description: t.description } : {}),
        parameters: isObject(t.input_schema) ? t.input_schema : { type: 'object', properties: {} },
      },
    };
  });
};

/** SPEC 4.2 rule 7 tool_choice; disable_parallel_tool_use applies whatever the choice. */
const internalToolChoice = (choice: unknown): Record<string, unknown> => {
  if (choice === undefined || choice === null) return {};
  if (!isObject(choice)) throw invalid('tool_choice must be an object', 'tool_choice');
  const parallel = choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case 'auto':
      return { tool_choice: 'auto', ...parallel };
    case 'any':
      return { tool_choice: 'required', ...parallel };
    case 'none':
      return { tool_choice: 'none', ...parallel };
    case 'tool':
      if (typeof choice.name !== 'string' || choice.name === '')
        throw invalid('tool_choice.name is required when type is tool', 'tool_choice.name');
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
    default:
      throw invalid('tool_choice.type must be auto, any, none or tool', 'tool_choice.type');
  }
};

const thinkingEnabled = (thinking: unknown): boolean => {
  if (thinking === undefined || thinking === null) return false;
  if (!isObject(thinking) || typeof thinking.type !== 'string')
    throw invalid('thinking must be an object with a type', 'thinking');
  return thinking.type !== 'disabled';
};

/**
 * SPEC 4.2 rules 1, 2 and 8: an alternate-dialect request as the internal (primary-shaped) body,
 * with the inbound JSON and the alt-beta header in the preservation envelope. max_tokens is
 * required on messages (no default) and dropped on count_tokens.
 */
export const parseAltBody = (
  body: unknown,
  options: { route: Route; beta: string | null },
): CanonicalRequest => {
  if (!isObject(body)) throw invalid('the request body must be a JSON object', 'body');
  if (typeof body.model !== 'string' || body.model.trim() === '')
    throw invalid('model: Field required (a non-empty string)', 'model');
  const counting = options.route === '/alt/v1/messages/count_tokens';
  const max = body.max_tokens;
  // The escrow hold is sized on it (SPEC 8): a positive safe integer, nothing wider.
  if (!counting && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1))
    throw invalid(
      max === undefined
        ? 'max_tokens: Field required'
        : `max_tokens must be a positive integer (at most ${Number.MAX_SAFE_INTEGER})`,
      'max_tokens',
    );
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw invalid('stream must be a boolean', 'stream');
  const stop = body.stop_sequences;
  if (stop !== undefined && (!Array.isArray(stop) || !stop.every((s) => typeof s === 'string')))
    throw invalid('stop_sequences must be an array of strings', 'stop_sequences');
  const user = isObject(body.metadata) ? body.metadata.user_id : undefined;
  const thinking = thinkingEnabled(body.thinking);
  const stream = !counting && body.stream === true;
  const internal: Record<string, unknown> = {
    model: body.model,
    messages: [...internalSystem(body.system), ...internalMessages(body.messages)],
    ...(!counting ? { max_tokens: max } : {}),
    ...(stream ? { stream: true } : {}),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
    ...(Array.isArray(stop) && stop.length > 0 ? { stop } : {}),
    ...(body.tools !== undefined ? { tools: internalTools(body.tools) } : {}),
    ...internalToolChoice(body.tool_choice),
    ...(typeof user === 'string' ? { user } : {}),
  };
  return {
    ...parseChatBody(internal),
    route: options.route,
    operation: counting ? 'count_tokens' : 'chat',
    includeUsage: false,
    preserved: { raw: body, beta: options.beta, thinking },
  };
};
