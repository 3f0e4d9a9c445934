import { ServiceError } from '../../../lib/errors.js';
import { isPlainObject } from '../../../lib/fields.js';

/**
 * What the gateway itself reads in a primary-dialect body, checked at the edge so that a body it
 * cannot read is refused with a 400 before any upstream call, never after one (SPEC 4.1 rule 10,
 * 7.1): output limits, on which the escrow hold is sized (SPEC 8 "escrow hold"), and the shapes of
 * message content parts and tool calls, which translation and metering walk. Anything else passes
 * through for the upstream to judge (STYLE.md rule 3).
 */

export const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** The body as a JSON object, else a 400 naming it. */
export const objectBody = (body: unknown): Record<string, unknown> => {
  if (!isPlainObject(body)) throw invalid('body', 'the request body must be a JSON object');
  return body;
};

/** The model selector, trimmed; required. */
export const modelOf = (raw: Record<string, unknown>): string => {
  if (typeof raw.model !== 'string' || raw.model.trim() === '')
    throw invalid('model', 'model is required and must be a string');
  return raw.model.trim();
};

/**
 * An output limit (max_tokens, max_completion_tokens, max_output_tokens): absent or null, or a
 * positive safe integer. Anything else (1e308, -1, 0.5, 2^53 + 1, a string) cannot size a hold.
 */
export const outputLimit = (raw: Record<string, unknown>, field: string): number | undefined => {
  const value = raw[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalid(field, `${field} must be a positive integer (at most ${Number.MAX_SAFE_INTEGER})`);
  return value;
};

/** The larger of the output limits the body states: the most an upstream may be asked to write. */
export const largestOutputLimit = (
  raw: Record<string, unknown>,
  fields: readonly string[],
): number | undefined => {
  let largest: number | undefined;
  for (const field of fields) {
    const value = outputLimit(raw, field);
    if (value !== undefined && (largest === undefined || value > largest)) largest = value;
  }
  return largest;
};

/** Content: a string, null (an assistant turn of tool calls), or an array of typed part objects. */
const checkContent = (content: unknown, param: string): void => {
  if (content === undefined || content === null || typeof content === 'string') return;
  if (!Array.isArray(content)) throw invalid(param, `${param} must be a string or an array of content parts`);
  for (const [i, part] of content.entries())
    if (!isPlainObject(part) || typeof part.type !== 'string')
      throw invalid(`${param}[${i}]`, `${param}[${i}] must be a content part object with a string type`);
};

/** Tool calls of an assistant turn: objects whose function, when present, is an object. */
const checkToolCalls = (calls: unknown, param: string): void => {
  if (calls === undefined || calls === null) return;
  if (!Array.isArray(calls)) throw invalid(param, `${param} must be an array of tool calls`);
  for (const [i, call] of calls.entries()) {
    const at = `${param}[${i}]`;
    if (!isPlainObject(call)) throw invalid(at, `${at} must be a tool call object`);
    const fn = call.function;
    if (fn !== undefined && (!isPlainObject(fn) || (fn.name !== undefined && typeof fn.name !== 'string')))
      throw invalid(`${at}.function`, `${at}.function must be an object with a string name`);
  }
};

/** Every message an object with a string role, its content and tool calls of a readable shape. */
export const checkMessages = (messages: unknown): void => {
  if (!Array.isArray(messages) || messages.length === 0)
    throw invalid('messages', 'messages must be a non-empty array');
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    if (!isPlainObject(m) || typeof m.role !== 'string')
      throw invalid(at, `${at} must be an object with a role`);
    checkContent(m.content, `${at}.content`);
    checkToolCalls(m.tool_calls, `${at}.tool_calls`);
  }
};
