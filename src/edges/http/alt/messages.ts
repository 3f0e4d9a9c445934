import { ServiceError } from '../../../lib/errors.js';
import type { ChatMessage, ContentPart, ToolCall } from '../../../providers/contract.js';

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const invalid = (message: string, param: string) =>
  new ServiceError('invalid_request_error', message, { param });

/** SPEC 4.2 rule 7: ids are preserved byte for byte, so they must be there to preserve. */
const requireId = (value: unknown, param: string): string => {
  if (typeof value !== 'string' || value === '') throw invalid(`${param} must be a non-empty string`, param);
  return value;
};

/** SPEC 4.2 rule 7: base64 or http(s) URL sources become image_url parts; anything else is a 400. */
const imagePart = (block: Record<string, unknown>, param: string): ContentPart => {
  const source = block.source;
  if (!isObject(source)) throw invalid(`${param}.source is required for an image block`, `${param}.source`);
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || source.media_type === '')
      throw invalid(`${param}.source.media_type is required`, `${param}.source.media_type`);
    if (typeof source.data !== 'string' || source.data === '')
      throw invalid(`${param}.source.data is required`, `${param}.source.data`);
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\/\S+$/i.test(source.url))
      throw invalid(`${param}.source.url must be an http(s) URL`, `${param}.source.url`);
    return { type: 'image_url', image_url: { url: source.url } };
  }
  throw invalid(`${param}.source.type must be base64 or url`, `${param}.source.type`);
};

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
    .join('');
};

/** Parts collapse to a string when they are all text, as primary callers usually write them. */
const partsOrString = (parts: ContentPart[]): string | ContentPart[] =>
  parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('') : parts;

/**
 * A user turn: tool_result blocks become tool messages first (the primary wire wants them right
 * after the assistant's tool calls), then the rest as one user message. Cache hints are stripped:
 * only a messages-style target honours them, and it rebuilds from the inbound JSON.
 */
const userTurn = (content: unknown, param: string): ChatMessage[] => {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const results: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  for (const [i, block] of (content as unknown[]).entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(block)) throw invalid(`${at} must be a content block object`, at);
    if (block.type === 'text' && typeof block.text === 'string')
      parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') parts.push(imagePart(block, at));
    else if (block.type === 'tool_result')
      results.push({
        role: 'tool',
        tool_call_id: requireId(block.tool_use_id, `${at}.tool_use_id`),
        content: textOf(block.content),
      });
    // Documents and other kinds have no primary-dialect part.
  }
  return parts.length > 0 || results.length === 0
    ? [...results, { role: 'user', content: partsOrString(parts) }]
    : results;
};

/** An assistant turn: text joined, tool_use as tool calls; thinking history only a messages-style target replays. */
const assistantTurn = (content: unknown, param: string): ChatMessage => {
  if (typeof content === 'string') return { role: 'assistant', content };
  const texts: string[] = [];
  const calls: ToolCall[] = [];
  for (const [i, block] of (content as unknown[]).entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(block)) throw invalid(`${at} must be a content block object`, at);
    if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else if (block.type === 'tool_use')
      calls.push({
        id: requireId(block.id, `${at}.id`),
        type: 'function',
        function: {
          name: typeof block.name === 'string' ? block.name : '',
          arguments: JSON.stringify(block.input ?? {}),
        },
      });
  }
  return {
    role: 'assistant',
    content: texts.length > 0 || calls.length === 0 ? texts.join('') : null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
};

/** SPEC 4.2 rule 1: messages to primary-dialect messages, validated where the gateway relies on them. */
export const internalMessages = (messages: unknown): ChatMessage[] => {
  if (!Array.isArray(messages) || messages.length === 0)
    throw invalid('messages must be a non-empty array', 'messages');
  const out: ChatMessage[] = [];
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant'))
      throw invalid(`${at} must be an object with role user or assistant`, `${at}.role`);
    if (typeof m.content !== 'string' && !Array.isArray(m.content))
      throw invalid(`${at}.content must be a string or an array of content blocks`, `${at}.content`);
    if (m.role === 'user') out.push(...userTurn(m.content, `${at}.content`));
    else out.push(assistantTurn(m.content, `${at}.content`));
  }
  return out;
};

/** A block-array system flattens to one joined string with its hints removed (SPEC 4.2 rule 8). */
export const internalSystem = (system: unknown): ChatMessage[] => {
  if (system === undefined || system === null) return [];
  if (typeof system === 'string') return system === '' ? [] : [{ role: 'system', content: system }];
  if (!Array.isArray(system)) throw invalid('system must be a string or an array of text blocks', 'system');
  for (const [i, b] of system.entries())
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string')
      throw invalid(`system[${i}] must be a text block`, `system[${i}]`);
  return [{ role: 'system', content: textOf(system) }];
};
