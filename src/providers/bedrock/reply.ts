import type { CanonicalReply, FinishReason, ToolCall, Usage } from '../contract.js';

/** SPEC 4.7 rule 5: stopReason to finish_reason; every reason not named is an ordinary stop. */
export const finishReasonOf = (stopReason: unknown): FinishReason => {
  switch (stopReason) {
    case 'max_tokens':
      return 'length';
    case 'content_filtered':
    case 'guardrail_intervened':
      return 'content_filter';
    case 'tool_use':
      return 'tool_calls';
    default:
      return 'stop';
  }
};

const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);

/**
 * Runtime usage in the primary shape. Buffered replies and the stream's metadata event go through
 * this one function, so equal token counts meter identically (rule 7); reasoning is always zero on
 * this route (SPEC 4.1 rule 9).
 */
export const usageOf = (usage: unknown): Usage | null => {
  if (!usage || typeof usage !== 'object') return null;
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown };
  const prompt = count(inputTokens);
  const completion = count(outputTokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    completion_tokens_details: { reasoning_tokens: 0 },
  };
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A Converse reply as the canonical reply; null when the JSON is not Converse-shaped. */
export const converseReply = (json: unknown, model: string, now = Date.now()): CanonicalReply | null => {
  if (!isObject(json) || !isObject(json.output) || !isObject(json.output.message)) return null;
  const content = json.output.message.content;
  if (!Array.isArray(content)) return null;
  let text = '';
  let sawText = false;
  const toolCalls: ToolCall[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    if (typeof block.text === 'string') {
      text += block.text;
      sawText = true;
    } else if (isObject(block.toolUse)) {
      const use = block.toolUse;
      toolCalls.push({
        id: typeof use.toolUseId === 'string' ? use.toolUseId : '',
        type: 'function',
        function: {
          name: typeof use.name === 'string' ? use.name : '',
          arguments: JSON.stringify(use.input ?? {}),
        },
      });
    }
    // Reasoning and other block kinds have no representation on this route (SPEC 4.1 rule 7).
  }
  return {
    id: '',
    created: Math.floor(now / 1000),
    model,
    message: {
      role: 'assistant',
      content: sawText || toolCalls.length === 0 ? text : null,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    },
    finishReason: finishReasonOf(json.stopReason),
    usage: usageOf(json.usage),
  };
};
