/**
 * The internal contract of the request path (ARCHITECTURE.md "The request path"; issue 6). Every
 * edge translates its dialect into a CanonicalRequest; every provider adapter translates out of it
 * and back into a CanonicalReply or a stream of CanonicalChunks; the edge renders those in the
 * caller's dialect. The shapes follow the primary dialect's chat-completions wire, which is the
 * richest common ground, with the inbound JSON kept for pass-through of fields we do not read.
 */

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface TextPart {
  type: 'text';
  text: string;
  /** Messages-style prompt-caching hint, carried through when the edge saw one. */
  cache_control?: Record<string, unknown>;
}
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: string };
}
export interface AudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: string };
}
export type ContentPart = TextPart | ImagePart | AudioPart | { type: string; [key: string]: unknown };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** Extended-thinking text and signature echoed in assistant history (SPEC 4.1 rule 7). */
  reasoning_content?: string;
  reasoning_signature?: string;
}

export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export type Operation = 'chat' | 'embeddings' | 'responses' | 'moderations' | 'images' | 'count_tokens';

/** Which edge a request came through: analytics `route` and the dialect of every reply. */
export type Route =
  | '/v1/chat/completions'
  | '/alt/v1/messages'
  | '/alt/v1/messages/count_tokens'
  | '/v1/embeddings'
  | '/v1/responses';

export interface CanonicalRequest {
  operation: Operation;
  route: Route;
  /** The model selector as the caller wrote it (SPEC 4.1 rule 1). */
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  tools?: FunctionTool[] | unknown;
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: Record<string, unknown>;
  n?: unknown;
  endUserId?: string;
  /** The inbound JSON as parsed once at the edge: pass-through for reference-shaped upstreams. */
  raw: Record<string, unknown>;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: {
    cached_tokens?: number;
    audio_tokens?: number | null;
    cache_write_tokens?: number;
  };
  completion_tokens_details?: { reasoning_tokens?: number; audio_tokens?: number | null };
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call' | string;

export interface CanonicalReply {
  id: string;
  created: number;
  /** The serving model as the upstream named it. */
  model: string;
  message: ChatMessage;
  finishReason: FinishReason | null;
  usage: Usage | null;
  /** A reference-shaped upstream's own JSON: the primary edge relays it with id and model rewritten. */
  raw?: Record<string, unknown>;
}

/** One streamed delta, in the shape of a chat.completion.chunk choice plus an optional usage. */
export interface CanonicalChunk {
  delta: {
    role?: 'assistant';
    content?: string;
    reasoning_content?: string;
    reasoning_signature?: string;
    tool_calls?: {
      index: number;
      id?: string;
      type?: 'function';
      function: { name?: string; arguments?: string };
    }[];
  };
  finishReason?: FinishReason | null;
  usage?: Usage | null;
  /** A reference-shaped upstream's own chunk: the primary edge relays it with id and model rewritten. */
  raw?: Record<string, unknown>;
}
