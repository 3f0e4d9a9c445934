import { parseNested } from '../../lib/json-depth.js';
import type { CanonicalRequest, ChatMessage } from '../contract.js';

/**
 * SPEC 4.7 request translation (conversation runtime), rules 1-4, plus the refusals of SPEC 8 (n)
 * and rule 6 (stream_options). Pure: every client error is found before any upstream call and
 * names the parameter at fault.
 */

export type TextBlock = { text: string };
export type ToolUseBlock = { toolUse: { toolUseId: string; name: string; input: unknown } };
export type ToolResultBlock = { toolResult: { toolUseId: string; content: TextBlock[] } };
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

export interface ToolSpec {
  toolSpec: { name: string; description?: string; inputSchema: { json: Record<string, unknown> } };
}

export type ToolChoiceOut =
  | { auto: Record<string, never> }
  | { any: Record<string, never> }
  | { tool: { name: string } };

export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: TextBlock[];
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: ToolSpec[]; toolChoice?: ToolChoiceOut };
}

export type Translation =
  | { ok: true; request: ConverseRequest }
  | { ok: false; param: string; message: string };

class ClientError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Text parts only: the runtime translation carries no images or audio, and says so. */
const textBlocks = (content: ChatMessage['content'] | unknown, param: string): TextBlock[] => {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw new ClientError(param, `${param} must be a string or an array of parts`);
  const blocks: TextBlock[] = [];
  for (const [j, part] of content.entries()) {
    const type = isObject(part) ? part.type : undefined;
    if (type !== 'text' || typeof (part as { text?: unknown }).text !== 'string') {
      throw new ClientError(
        `${param}[${j}]`,
        `${param}[${j}] of type ${typeof type === 'string' ? type : typeName(part)} is not supported by the managed runtime; only text parts are`,
      );
    }
    const text = (part as { text: string }).text;
    if (text !== '') blocks.push({ text });
  }
  return blocks;
};

const requireText = (blocks: TextBlock[], param: string, role: string): TextBlock[] => {
  if (blocks.length === 0) throw new ClientError(param, `${param}: a ${role} message must have text content`);
  return blocks;
};

const toolUseBlocks = (calls: unknown, param: string): { blocks: ToolUseBlock[]; ids: Set<string> } => {
  if (!Array.isArray(calls)) throw new ClientError(param, `${param} must be an array`);
  const blocks: ToolUseBlock[] = [];
  const ids = new Set<string>();
  for (const [j, call] of calls.entries()) {
    const at = `${param}[${j}]`;
    if (!isObject(call)) throw new ClientError(at, `${at} must be an object`);
    if (typeof call.id !== 'string' || call.id === '')
      throw new ClientError(`${at}.id`, `${at}.id is required`);
    const fn = call.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '')
      throw new ClientError(`${at}.function.name`, `${at}.function.name is required`);
    const input = parseNested(typeof fn.arguments === 'string' ? fn.arguments : '');
    if (!input.ok)
      throw new ClientError(
        `${at}.function.arguments`,
        `${at}.function.arguments must be a JSON text (it ${input.why})`,
      );
    blocks.push({ toolUse: { toolUseId: call.id, name: fn.name, input: input.value } });
    ids.add(call.id);
  }
  return { blocks, ids };
};

/** Rules 1 and 4: roles, text blocks, toolUse and toolResult turns, same-role turns merged. */
const translateMessages = (messages: readonly ChatMessage[]) => {
  const system: TextBlock[] = [];
  const turns: ConverseMessage[] = [];
  const push = (role: ConverseMessage['role'], content: ContentBlock[]) => {
    const last = turns.at(-1);
    // The runtime wants alternating turns: results of one assistant turn, and any user text
    // after them, share a single user turn.
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  };
  let pending = new Set<string>();
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    const role: unknown = m.role;
    switch (role) {
      // developer is the newer spelling of system in the primary dialect.
      case 'system':
      case 'developer':
        system.push(...requireText(textBlocks(m.content, `${at}.content`), `${at}.content`, role));
        pending = new Set();
        break;
      case 'user':
        push('user', requireText(textBlocks(m.content, `${at}.content`), `${at}.content`, role));
        pending = new Set();
        break;
      case 'assistant': {
        const text = textBlocks(m.content, `${at}.content`);
        const calls =
          m.tool_calls === undefined || m.tool_calls === null
            ? { blocks: [], ids: new Set<string>() }
            : toolUseBlocks(m.tool_calls, `${at}.tool_calls`);
        if (text.length === 0 && calls.blocks.length === 0)
          throw new ClientError(
            `${at}.content`,
            `${at}.content: an assistant message needs text or tool_calls`,
          );
        push('assistant', [...text, ...calls.blocks]);
        pending = calls.ids;
        break;
      }
      case 'tool': {
        const id: unknown = m.tool_call_id;
        if (typeof id !== 'string' || id === '')
          throw new ClientError(`${at}.tool_call_id`, `${at}.tool_call_id is required on a tool message`);
        if (!pending.has(id)) {
          throw new ClientError(
            `${at}.tool_call_id`,
            `${at}.tool_call_id ${id} matches no tool call of the preceding assistant message`,
          );
        }
        const content = requireText(textBlocks(m.content, `${at}.content`), `${at}.content`, role);
        push('user', [{ toolResult: { toolUseId: id, content } }]);
        break;
      }
      default:
        throw new ClientError(
          `${at}.role`,
          `${at}.role ${String(role)} is not accepted by the managed runtime (system, developer, user, assistant, tool)`,
        );
    }
  }
  return { system, turns };
};

/** Rule 2 and the non-function refusal of rule 3; null when no tools are declared. */
const translateTools = (tools: unknown): { specs: ToolSpec[]; names: Set<string> } | null => {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) throw new ClientError('tools', 'tools must be an array of function tools');
  if (tools.length === 0) return null;
  const specs: ToolSpec[] = [];
  const names = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    const at = `tools[${i}]`;
    if (!isObject(tool)) throw new ClientError(at, `${at} must be an object`);
    if (tool.type !== 'function') {
      throw new ClientError(
        `${at}.type`,
        `${at} of type ${String(tool.type)} is not supported by the managed runtime; only function tools are`,
      );
    }
    const fn = tool.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '')
      throw new ClientError(`${at}.function.name`, `${at}.function.name is required`);
    const parameters = fn.parameters ?? { type: 'object', properties: {} };
    if (!isObject(parameters))
      throw new ClientError(
        `${at}.function.parameters`,
        `${at}.function.parameters must be a JSON schema object`,
      );
    specs.push({
      toolSpec: {
        name: fn.name,
        ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
        inputSchema: { json: parameters },
      },
    });
    names.add(fn.name);
  }
  return { specs, names };
};

/** The tool_choice table of rule 2 and the refusals of rule 3; undefined is "no toolChoice". */
const translateToolChoice = (
  choice: unknown,
  tools: { names: Set<string> } | null,
): ToolChoiceOut | 'none' | undefined => {
  if (choice === undefined || choice === null) return undefined;
  if (tools === null) throw new ClientError('tool_choice', 'tool_choice was given but no tools are declared');
  if (choice === 'none') return 'none';
  if (choice === 'auto') return { auto: {} };
  if (choice === 'required') return { any: {} };
  if (isObject(choice) && choice.type === 'function') {
    const name = isObject(choice.function) ? choice.function.name : undefined;
    if (typeof name !== 'string' || !tools.names.has(name)) {
      throw new ClientError(
        'tool_choice.function.name',
        `tool_choice names function ${String(name)}, which is not among the declared tools`,
      );
    }
    return { tool: { name } };
  }
  const shown = isObject(choice) ? `of type ${String(choice.type)}` : JSON.stringify(choice);
  throw new ClientError('tool_choice', `tool_choice ${shown} is not supported by the managed runtime`);
};

const refuseUnsupportedOptions = (raw: Record<string, unknown>): void => {
  if (raw.n !== undefined && raw.n !== null)
    throw new ClientError('n', 'n is not supported by the managed runtime; omit it (one choice is returned)');
  const options = raw.stream_options;
  if (options === undefined || options === null) return;
  if (!isObject(options)) throw new ClientError('stream_options', 'stream_options must be an object');
  for (const key of Object.keys(options)) {
    if (key !== 'include_usage') {
      throw new ClientError(
        `stream_options.${key}`,
        `stream_options.${key} is not supported by the managed runtime; only include_usage is`,
      );
    }
  }
};

const stopSequences = (stop: unknown): string[] | undefined => {
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) return stop.length ? stop : undefined;
  return undefined;
};

export const translateChat = (request: CanonicalRequest): Translation => {
  try {
    refuseUnsupportedOptions(request.raw);
    const tools = translateTools(request.raw.tools);
    const choice = translateToolChoice(request.raw.tool_choice, tools);
    const { system, turns } = translateMessages(request.messages);
    const stop = stopSequences(request.raw.stop);
    const inference = {
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.topP !== undefined ? { topP: request.topP } : {}),
      ...(stop ? { stopSequences: stop } : {}),
    };
    const body: ConverseRequest = {
      messages: turns,
      ...(system.length ? { system } : {}),
      ...(Object.keys(inference).length ? { inferenceConfig: inference } : {}),
      ...(tools !== null && choice !== 'none'
        ? { toolConfig: { tools: tools.specs, ...(choice ? { toolChoice: choice } : {}) } }
        : {}),
    };
    return { ok: true, request: body };
  } catch (err) {
    if (err instanceof ClientError) return { ok: false, param: err.param, message: err.message };
    throw err;
  }
};
