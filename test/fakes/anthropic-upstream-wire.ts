import { randomBytes } from 'node:crypto';

/**
 * The Messages wire of the fake Anthropic upstream: one reply script rendered either as a buffered
 * message or as the event stream the real API sends for it, so both shapes of one script agree.
 */

export type BlockSpec =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id?: string; name: string; input: Record<string, unknown> }
  | { type: 'server_tool_use'; id?: string; name: string; input: Record<string, unknown> }
  | { type: 'web_search_tool_result'; tool_use_id: string; content: unknown[] };

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';

export interface UsageSpec {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  service_tier?: 'standard' | 'priority' | 'batch';
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
  thinking_tokens?: number;
}

export interface MessageSpec {
  /** Content in order; by default one text block echoing the last user text. */
  blocks?: BlockSpec[];
  stopReason?: StopReason;
  stopSequence?: string | null;
  /** Overrides of the computed usage (input = ceil(bytes of system + messages / 4), output = words). */
  usage?: Partial<UsageSpec>;
  model?: string;
  id?: string;
  /** Fragments each streamed text, thinking or tool input is cut into (default 3). */
  deltaChunks?: number;
  /** message_delta states only output_tokens, as the API did before it restated every counter. */
  legacyDeltaUsage?: boolean;
}

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}

export const STATUS_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export const randomId = (prefix: string, length = 24): string =>
  `${prefix}${randomBytes(length).toString('base64url').slice(0, length)}`;

export const anthropicError = (type: string, message: string): AnthropicErrorBody => ({
  type: 'error',
  error: { type, message },
  request_id: randomId('req_'),
});

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .map((b) => (isRecord(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
          .join(' ')
      : '';

export const lastUserText = (body: Record<string, unknown>): string => {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isRecord(m) && m.role === 'user') return textOf(m.content).trim();
  }
  return '';
};

export const promptTokens = (body: Record<string, unknown>): number =>
  Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify([body.system ?? null, body.messages ?? []])) / 4));

const words = (s: string) => (s.trim() === '' ? 0 : s.trim().split(/\s+/).length);

/** The script's reply once the request is known: blocks, stop reason and usage resolved. */
export interface Resolved {
  id: string;
  model: string;
  blocks: BlockSpec[];
  stopReason: StopReason;
  stopSequence: string | null;
  usage: UsageSpec;
  deltaChunks: number;
  legacyDeltaUsage: boolean;
}

export const resolve = (spec: MessageSpec, body: Record<string, unknown>): Resolved => {
  const blocks = (spec.blocks ?? [{ type: 'text', text: lastUserText(body) || 'OK' }]).map((b) =>
    (b.type === 'tool_use' || b.type === 'server_tool_use') && b.id === undefined
      ? { ...b, id: randomId(b.type === 'tool_use' ? 'toolu_' : 'srvtoolu_') }
      : b,
  );
  const generated = blocks
    .map((b) => (b.type === 'text' ? b.text : b.type === 'thinking' ? b.thinking : ''))
    .join(' ');
  return {
    id: spec.id ?? randomId('msg_'),
    model: spec.model ?? (typeof body.model === 'string' ? body.model : 'claude'),
    blocks,
    stopReason: spec.stopReason ?? (blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
    stopSequence: spec.stopSequence ?? null,
    usage: {
      input_tokens: promptTokens(body),
      output_tokens: Math.max(1, words(generated)),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      service_tier: 'standard',
      ...spec.usage,
    },
    deltaChunks: spec.deltaChunks ?? 3,
    legacyDeltaUsage: spec.legacyDeltaUsage ?? false,
  };
};

/** The usage object of a buffered message. */
const fullUsage = (u: UsageSpec): Record<string, unknown> => ({
  input_tokens: u.input_tokens,
  cache_creation_input_tokens: u.cache_creation_input_tokens,
  cache_read_input_tokens: u.cache_read_input_tokens,
  ...(u.cache_creation ? { cache_creation: u.cache_creation } : {}),
  output_tokens: u.output_tokens,
  ...(u.server_tool_use ? { server_tool_use: u.server_tool_use } : {}),
  ...(u.thinking_tokens !== undefined
    ? { output_tokens_details: { thinking_tokens: u.thinking_tokens } }
    : {}),
  ...(u.service_tier ? { service_tier: u.service_tier } : {}),
});

export const bufferedMessage = (r: Resolved): Record<string, unknown> => ({
  id: r.id,
  type: 'message',
  role: 'assistant',
  model: r.model,
  content: r.blocks,
  stop_reason: r.stopReason,
  stop_sequence: r.stopSequence,
  usage: fullUsage(r.usage),
});

/** Cuts a string into `n` fragments of near-equal length (never fewer than one, never empty ones). */
export const fragments = (s: string, n: number): string[] => {
  if (s === '') return [];
  const size = Math.max(1, Math.ceil(s.length / Math.max(1, n)));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
};

export const sseFrame = (event: string, data: unknown): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const startShape = (b: BlockSpec): Record<string, unknown> => {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: '' };
    case 'thinking':
      return { type: 'thinking', thinking: '', signature: '' };
    case 'tool_use':
    case 'server_tool_use':
      return { type: b.type, id: b.id, name: b.name, input: {} };
    default:
      return b;
  }
};

const deltasOf = (b: BlockSpec, n: number): Record<string, unknown>[] => {
  switch (b.type) {
    case 'text':
      return fragments(b.text, n).map((text) => ({ type: 'text_delta', text }));
    case 'thinking':
      return [
        ...fragments(b.thinking, n).map((thinking) => ({ type: 'thinking_delta', thinking })),
        { type: 'signature_delta', signature: b.signature },
      ];
    case 'tool_use':
    case 'server_tool_use':
      // The real API streams a tool without input as one empty fragment, never as `{}`.
      if (Object.keys(b.input).length === 0) return [{ type: 'input_json_delta', partial_json: '' }];
      return fragments(JSON.stringify(b.input), n).map((partial_json) => ({
        type: 'input_json_delta',
        partial_json,
      }));
    default:
      return [];
  }
};

/** The SSE frames of a streamed reply, in the real API's order (with one ping after message_start). */
export const streamFrames = (r: Resolved): string[] => {
  const u = r.usage;
  const frames = [
    sseFrame('message_start', {
      type: 'message_start',
      message: {
        id: r.id,
        type: 'message',
        role: 'assistant',
        model: r.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: u.input_tokens,
          cache_creation_input_tokens: u.cache_creation_input_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens,
          ...(u.cache_creation ? { cache_creation: u.cache_creation } : {}),
          output_tokens: 1,
          ...(u.service_tier ? { service_tier: u.service_tier } : {}),
        },
      },
    }),
    sseFrame('ping', { type: 'ping' }),
  ];
  r.blocks.forEach((b, index) => {
    frames.push(
      sseFrame('content_block_start', { type: 'content_block_start', index, content_block: startShape(b) }),
    );
    for (const delta of deltasOf(b, r.deltaChunks))
      frames.push(sseFrame('content_block_delta', { type: 'content_block_delta', index, delta }));
    frames.push(sseFrame('content_block_stop', { type: 'content_block_stop', index }));
  });
  const usage = r.legacyDeltaUsage
    ? { output_tokens: u.output_tokens }
    : {
        input_tokens: u.input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
        output_tokens: u.output_tokens,
        ...(u.server_tool_use ? { server_tool_use: u.server_tool_use } : {}),
        ...(u.thinking_tokens !== undefined
          ? { output_tokens_details: { thinking_tokens: u.thinking_tokens } }
          : {}),
      };
  frames.push(
    sseFrame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: r.stopReason, stop_sequence: r.stopSequence },
      usage,
    }),
  );
  frames.push(sseFrame('message_stop', { type: 'message_stop' }));
  return frames;
};
