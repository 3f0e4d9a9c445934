import type { CanonicalReply, ReplyBlock, ToolCall } from '../contract.js';
import { finishReasonOf, isObject, serviceTierOf, usageOf } from './usage.js';

/**
 * A buffered messages-style reply in canonical form (SPEC 4.1 rule 7). Text blocks join into
 * content; thinking blocks into reasoning_content, with reasoning_signature only when there was
 * exactly one; tool_use blocks become tool_calls. The ordered blocks ride along for the alternate
 * edge; server-tool and other block kinds have no representation on either edge.
 */
export const messagesReply = (json: unknown, fallbackModel: string): CanonicalReply | null => {
  if (!isObject(json) || !Array.isArray(json.content)) return null;
  const blocks: ReplyBlock[] = [];
  const texts: string[] = [];
  const thinking: { thinking: string; signature: string }[] = [];
  const toolCalls: ToolCall[] = [];
  for (const b of json.content) {
    if (!isObject(b)) continue;
    switch (b.type) {
      case 'text': {
        const text = typeof b.text === 'string' ? b.text : '';
        texts.push(text);
        blocks.push({ type: 'text', text });
        break;
      }
      case 'thinking': {
        const block = {
          thinking: typeof b.thinking === 'string' ? b.thinking : '',
          signature: typeof b.signature === 'string' ? b.signature : '',
        };
        thinking.push(block);
        blocks.push({ type: 'thinking', ...block });
        break;
      }
      case 'redacted_thinking':
        blocks.push({ type: 'redacted_thinking', data: typeof b.data === 'string' ? b.data : '' });
        break;
      case 'tool_use': {
        const id = typeof b.id === 'string' ? b.id : '';
        const name = typeof b.name === 'string' ? b.name : '';
        const input = b.input ?? {};
        toolCalls.push({ id, type: 'function', function: { name, arguments: JSON.stringify(input) } });
        blocks.push({ type: 'tool_use', id, name, input });
        break;
      }
      default:
        break;
    }
  }
  const only = thinking.length === 1 ? thinking[0] : undefined;
  return {
    id: typeof json.id === 'string' ? json.id : '',
    created: Math.floor(Date.now() / 1_000),
    model: typeof json.model === 'string' ? json.model : fallbackModel,
    message: {
      role: 'assistant',
      content: texts.length > 0 ? texts.join('') : null,
      ...(thinking.length > 0 ? { reasoning_content: thinking.map((t) => t.thinking).join('') } : {}),
      ...(only ? { reasoning_signature: only.signature } : {}),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    },
    finishReason: finishReasonOf(json.stop_reason),
    stopSequence: typeof json.stop_sequence === 'string' ? json.stop_sequence : null,
    usage: usageOf(json.usage),
    blocks,
    ...(serviceTierOf(json.usage) ? { serviceTier: serviceTierOf(json.usage) } : {}),
  };
};
