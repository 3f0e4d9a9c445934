import type { ReplyOptions } from './behaviours.js';
import { counts, missingModel, type RouteResult } from './routes.js';
import {
  approximateTokens,
  countWords,
  lastUserText,
  obfuscation,
  randomId,
  renderSuccess,
  splitContent,
} from './wire.js';

/**
 * A minimal `POST /v1/responses`: one assistant message of output text, buffered or as the typed
 * event stream (`event:` lines, `sequence_number`, no `[DONE]`).
 */

const inputText = (input: unknown): string => {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  // input_text parts carry `text` like chat text parts, so the chat reader serves both dialects.
  return lastUserText(input);
};

export const responses = (body: Record<string, unknown>, options: ReplyOptions): RouteResult => {
  if (typeof body.model !== 'string' || body.model === '') return missingModel();
  const text = options.text ?? (inputText(body.input) || 'OK');
  const tokens = counts(
    { promptTokens: approximateTokens(body.input ?? ''), completionTokens: countWords(text) },
    options.tokens,
  );
  const usage = options.rawUsage ?? {
    input_tokens: tokens.promptTokens,
    input_tokens_details: { cached_tokens: tokens.cachedTokens },
    output_tokens: tokens.completionTokens,
    output_tokens_details: { reasoning_tokens: tokens.reasoningTokens },
    total_tokens: tokens.promptTokens + tokens.completionTokens,
  };
  const id = randomId('resp_', 48);
  const messageId = randomId('msg_', 48);
  const createdAt = Math.floor(Date.now() / 1000);
  const part = (partText: string) => ({ type: 'output_text', annotations: [], logprobs: [], text: partText });
  const message = (status: string, content: unknown[]) => ({
    id: messageId,
    type: 'message',
    status,
    content,
    role: 'assistant',
  });
  const response = (status: string, output: unknown[], responseUsage: unknown) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: options.model ?? body.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: responseUsage,
    user: null,
    metadata: {},
  });
  const done = message('completed', [part(text)]);
  if (body.stream !== true)
    return { kind: 'json', status: 200, body: renderSuccess(response('completed', [done], usage)) };

  const frames: string[] = [];
  const event = (type: string, data: Record<string, unknown>): void => {
    frames.push(
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: frames.length, ...data })}\n\n`,
    );
  };
  const at = { item_id: messageId, output_index: 0, content_index: 0 };
  event('response.created', { response: response('in_progress', [], null) });
  event('response.in_progress', { response: response('in_progress', [], null) });
  event('response.output_item.added', { output_index: 0, item: message('in_progress', []) });
  event('response.content_part.added', { ...at, part: part('') });
  for (const delta of splitContent(text, options.chunks)) {
    event('response.output_text.delta', {
      ...at,
      delta,
      logprobs: [],
      obfuscation: obfuscation(frames.length),
    });
  }
  event('response.output_text.done', { ...at, text, logprobs: [] });
  event('response.content_part.done', { ...at, part: part(text) });
  event('response.output_item.done', { output_index: 0, item: done });
  event('response.completed', { response: response('completed', [done], usage) });
  return {
    kind: 'stream',
    frames,
    errorFrame: (error) =>
      `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: frames.length, code: error.code, message: error.message, param: error.param })}\n\n`,
  };
};
