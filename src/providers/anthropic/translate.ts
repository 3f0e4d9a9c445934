import { parseNested } from '../../lib/json-depth.js';
import type { CanonicalRequest, ChatMessage, ToolChoice } from '../contract.js';
import type { RegistryEndpoint } from '../endpoint.js';

import { hoistSystem, isHoisted, responseFormatInstruction } from './system.js';
import { isObject } from './usage.js';

/** Anthropic requires max_tokens; the primary dialect does not, so we choose when the caller did not. */
export const DEFAULT_MAX_TOKENS = 4_096;

export type Translated = { ok: true; body: Record<string, unknown> } | { ok: false; message: string };

type Block = Record<string, unknown>;

class Refused extends Error {}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** image_url parts back to image blocks (SPEC 4.2 rule 7 in the other direction). */
const imageBlock = (url: unknown): Block => {
  if (typeof url !== 'string') throw new Refused('an image_url part has no url');
  const data = DATA_URL.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new Refused('an image_url must be an http(s) URL or a base64 data URL');
};

const contentBlocks = (m: ChatMessage): Block[] => {
  const out: Block[] =
    typeof m.content === 'string'
      ? [{ type: 'text', text: m.content }]
      : Array.isArray(m.content)
        ? m.content.flatMap((p): Block[] => {
            if (!isObject(p)) return [p as unknown as Block];
            if (p.type === 'text')
              return [
                {
                  type: 'text',
                  text: p.text,
                  ...(isObject(p.cache_control) ? { cache_control: p.cache_control } : {}),
                },
              ];
            if (p.type === 'image_url')
              return [imageBlock(isObject(p.image_url) ? p.image_url.url : undefined)];
            // Audio has no messages-style input; anything else goes through for the upstream to judge.
            if (p.type === 'input_audio') return [];
            return [p];
          })
        : [];
  const hint = (m as { cache_control?: unknown }).cache_control;
  const last = out.at(-1);
  if (isObject(hint) && last) last.cache_control = hint;
  return out;
};

/** A block array collapses back to a string when it is one plain text block, as callers write it. */
const compact = (blocks: Block[]): string | Block[] => {
  const only = blocks[0];
  return blocks.length === 1 &&
    only?.type === 'text' &&
    only.cache_control === undefined &&
    typeof only.text === 'string'
    ? only.text
    : blocks;
};

const toolUse = (call: NonNullable<ChatMessage['tool_calls']>[number]): Block => {
  const input = parseNested(call.function?.arguments || '{}');
  if (!input.ok) throw new Refused(`tool call ${call.id} has arguments that ${input.why}`);
  return { type: 'tool_use', id: call.id, name: call.function?.name, input: input.value };
};

/** Conversation turns; names are dropped on every role and echoed reasoning is not replayed. */
const turns = (messages: readonly ChatMessage[]): Block[] => {
  const out: Block[] = [];
  for (const m of messages) {
    if (isHoisted(m)) continue;
    if (m.role === 'tool') {
      const result: Block = {
        type: 'tool_result',
        tool_use_id: m.tool_call_id,
        content: typeof m.content === 'string' ? m.content : contentBlocks(m),
      };
      const previous = out.at(-1);
      // Results answering one assistant turn go back in a single user turn.
      if (previous?.role === 'user' && Array.isArray(previous.content) && previous.results === true)
        (previous.content as Block[]).push(result);
      else out.push({ role: 'user', content: [result], results: true });
      continue;
    }
    if (m.role === 'assistant') {
      const calls = (m.tool_calls ?? []).map(toolUse);
      // Callers send content '' beside tool calls; an empty text block is refused upstream.
      const text = (m.content === null ? [] : contentBlocks(m)).filter(
        (b) => calls.length === 0 || b.type !== 'text' || b.text !== '' || b.cache_control !== undefined,
      );
      const blocks = [...text, ...calls];
      out.push({ role: 'assistant', content: compact(blocks) });
      continue;
    }
    out.push({ role: 'user', content: compact(contentBlocks(m)) });
  }
  return out.map(({ results: _marker, ...turn }) => turn);
};

/** Function tools as messages-style tools; anything else is forwarded for the upstream to judge. */
const toolsOf = (tools: unknown, webSearch: unknown): unknown => {
  const hosted = isObject(webSearch)
    ? [
        {
          type: 'web_search_20250305',
          name: 'web_search',
          ...(isObject(webSearch.user_location) && isObject(webSearch.user_location.approximate)
            ? { user_location: { type: 'approximate', ...webSearch.user_location.approximate } }
            : {}),
        },
      ]
    : [];
  if (tools === undefined || tools === null) return hosted.length > 0 ? hosted : undefined;
  if (!Array.isArray(tools)) return tools;
  return [
    ...tools.map((t) => {
      if (!isObject(t) || t.type !== 'function' || !isObject(t.function)) return t;
      const f = t.function;
      return {
        name: f.name,
        ...(f.description !== undefined ? { description: f.description } : {}),
        input_schema: isObject(f.parameters) ? f.parameters : { type: 'object', properties: {} },
      };
    }),
    ...hosted,
  ];
};

/** SPEC 4.1 rule 6 tool_choice and parallel_tool_calls. */
const toolChoiceOf = (choice: ToolChoice | undefined, parallel: boolean | undefined, usable: boolean) => {
  let out: Block | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') out = { type: 'none' };
  else if (isObject(choice) && isObject(choice.function)) out = { type: 'tool', name: choice.function.name };
  if (parallel === false && usable && out?.type !== 'none')
    out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
};

const ceilingOf = (requested: number | undefined, endpoint: Pick<RegistryEndpoint, 'max_output_tokens'>) => {
  const ceiling = endpoint.max_output_tokens ?? Number.POSITIVE_INFINITY;
  const wanted = requested ?? (Number.isFinite(ceiling) ? ceiling : DEFAULT_MAX_TOKENS);
  return Math.min(wanted, ceiling);
};

/** SPEC 4.1 rule 6: a primary-dialect request as a messages-style body. */
export const messagesBody = (
  request: CanonicalRequest,
  endpoint: Pick<RegistryEndpoint, 'provider_model_id' | 'max_output_tokens'>,
): Translated => {
  try {
    const system = hoistSystem(request.messages, responseFormatInstruction(request.responseFormat));
    const tools = toolsOf(request.tools, request.raw.web_search_options);
    const choice = toolChoiceOf(
      request.toolChoice,
      request.parallelToolCalls,
      Array.isArray(tools) && tools.length > 0,
    );
    const body: Record<string, unknown> = {
      model: endpoint.provider_model_id,
      max_tokens: ceilingOf(request.maxTokens, endpoint),
      ...(system !== undefined ? { system } : {}),
      messages: turns(request.messages),
      ...(request.stop && request.stop.length > 0 ? { stop_sequences: request.stop } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.topP !== undefined ? { top_p: request.topP } : {}),
      ...(request.endUserId !== undefined ? { metadata: { user_id: request.endUserId } } : {}),
      ...(tools !== undefined ? { tools } : {}),
      ...(choice !== undefined ? { tool_choice: choice } : {}),
      ...(request.stream ? { stream: true } : {}),
    };
    return { ok: true, body };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, message: err.message };
    throw err;
  }
};

/**
 * SPEC 4.2 rule 8: a request from the alternate edge rebuilt from its inbound JSON. Only the model
 * id is rewritten, max_tokens clamped to the endpoint ceiling and the streaming flag set, so thinking,
 * reasoning history, per-block cache_control and a block-array system reach the upstream unchanged.
 */
export const preservedBody = (
  raw: Record<string, unknown>,
  stream: boolean,
  endpoint: Pick<RegistryEndpoint, 'provider_model_id' | 'max_output_tokens'>,
): Record<string, unknown> => {
  const body: Record<string, unknown> = { ...raw, model: endpoint.provider_model_id };
  const ceiling = endpoint.max_output_tokens;
  if (typeof body.max_tokens === 'number' && ceiling !== null && body.max_tokens > ceiling)
    body.max_tokens = ceiling;
  if (stream) body.stream = true;
  return body;
};

/** The body of a count_tokens call: max_tokens and the stream flag are not count parameters. */
export const countBody = (
  request: CanonicalRequest,
  endpoint: Pick<RegistryEndpoint, 'provider_model_id' | 'max_output_tokens'>,
): Translated => {
  const built = request.preserved
    ? { ok: true as const, body: { ...request.preserved.raw, model: endpoint.provider_model_id } }
    : messagesBody(request, endpoint);
  if (!built.ok) return built;
  const { max_tokens: _max, stream: _stream, ...body } = built.body;
  return { ok: true, body };
};
