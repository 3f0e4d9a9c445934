/**
 * The internal contract of the request path (ARCHITECTURE.md "The request path"). Every
 * edge translates its dialect into a CanonicalRequest; every provider adapter translates out of it
 * and back into a CanonicalReply or a stream of CanonicalChunks; the edge renders those in the
 * caller's dialect. The shapes follow the primary dialect's chat-completions wire, which is the
 * richest common ground, with the inbound JSON kept for pass-through of fields we do not read.
 * Fields only the messages-style wire can express (reasoning blocks, cache tiers, the raw alternate
 * body) ride along as provider-internal fields that the primary renderer never shows (SPEC 4.1
 * rule 7).
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
  | '/v1/responses'
  | '/v1/moderations'
  | '/v1/images/generations'
  | '/v1/images/edits'
  | '/v1/images/variations';

/** One file of a multipart request (image edits and variations), held whole for retries. */
export interface UploadedFile {
  /** The form field it came in (`image`, `image[]`, `mask`). */
  field: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/**
 * SPEC 4.2 rule 8: what only the alternate dialect can say, kept so a messages-style target can
 * rebuild its body from the inbound JSON (thinking, per-block cache_control, block-array system,
 * reasoning history) instead of from the lossy translation.
 */
export interface PreservationEnvelope {
  /** The inbound alternate JSON exactly as parsed once at the edge. */
  raw: Record<string, unknown>;
  /** The alt-beta header value as received; forwarded to messages-style upstreams only. */
  beta: string | null;
  /** Extended thinking asked for: the route is pinned to messages-style endpoints. */
  thinking: boolean;
}

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
  /**
   * The primary-shaped body as parsed once at the edge (the alternate edge's translation of its
   * inbound JSON): pass-through for reference-shaped upstreams.
   */
  raw: Record<string, unknown>;
  /** Present only for requests that came through the alternate edge. */
  preserved?: PreservationEnvelope;
  /**
   * The files of a multipart request (SPEC 4.1: image edits and variations), in the order they came;
   * `raw` then holds the form's text fields, as strings.
   */
  uploads?: UploadedFile[];
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
  /** Provider-internal: messages-style counters with no primary-dialect field (never rendered there). */
  breakdown?: UsageBreakdown;
  /**
   * Image routes (SPEC 4.1 rule 9): the image share of the input, the output's image tokens and the
   * images returned, for image-token and per-image prices.
   */
  images?: { input_image_tokens: number; output_image_tokens: number; image_count: number };
}

export interface UsageBreakdown {
  /** Cache-write tokens per cache lifetime. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** Server-side tool calls the upstream ran and bills per call. */
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
}

/** One content block of a messages-style reply, in upstream order (SPEC 4.2 rules 3 and 6). */
export type ReplyBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

/** Block boundaries of a messages-style stream, so the alternate edge can rebuild its blocks. */
export type BlockEvent =
  | { type: 'text_start' }
  | { type: 'thinking_start' }
  | { type: 'thinking_stop' }
  | { type: 'redacted_thinking'; data: string };

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
  /** Provider-internal: the upstream's content blocks in order, when it had blocks. */
  blocks?: ReplyBlock[];
  /** The stop sequence that ended the turn, when one did. */
  stopSequence?: string | null;
  serviceTier?: string;
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
  /** Terminal usage: authoritative for the whole reply. */
  usage?: Usage | null;
  /** A reference-shaped upstream's own chunk: the primary edge relays it with id and model rewritten. */
  raw?: Record<string, unknown>;
  /** Provider-internal: a block boundary (never rendered on the primary dialect). */
  block?: BlockEvent;
  /** Provider-internal: input-side usage known when the upstream opened its message. */
  openingUsage?: Usage;
  stopSequence?: string | null;
  serviceTier?: string;
}
