import type { ChatMessage } from '../contract.js';
import { isObject } from './usage.js';

export interface SystemBlock {
  type: 'text';
  text: string;
  cache_control?: Record<string, unknown>;
}

/** A message-level cache_control hint, which the primary wire does not type but callers send. */
const messageHint = (m: ChatMessage): Record<string, unknown> | undefined => {
  const hint = (m as { cache_control?: unknown }).cache_control;
  return isObject(hint) ? hint : undefined;
};

/** The text blocks one message contributes: a string is one block, non-text parts contribute none. */
const blocksOf = (m: ChatMessage): SystemBlock[] => {
  const out: SystemBlock[] =
    typeof m.content === 'string'
      ? [{ type: 'text', text: m.content }]
      : Array.isArray(m.content)
        ? m.content.flatMap((p): SystemBlock[] => {
            if (!isObject(p) || p.type !== 'text' || typeof p.text !== 'string') return [];
            return [
              {
                type: 'text',
                text: p.text,
                ...(isObject(p.cache_control) ? { cache_control: p.cache_control } : {}),
              },
            ];
          })
        : [];
  const hint = messageHint(m);
  const last = out.at(-1);
  if (hint && last) last.cache_control = hint;
  return out;
};

export const isHoisted = (m: ChatMessage): boolean => m.role === 'system' || m.role === 'developer';

/**
 * SPEC 4.1 rule 6, system hoisting. Every hoisted message after the first opens with a newline
 * separating it from the previous one; parts inside one message are concatenated as they are. The
 * separator rides on the block the later message opens with, so every other block, including a
 * message's final block and every block of the first message, keeps the caller's bytes and its
 * cache breakpoint covers exactly the prefix the caller marked. The string form and the block form
 * spell the same prompt; blocks are used only when a hint needs one. The response_format
 * instruction follows after a blank line in both forms.
 */
export const hoistSystem = (
  messages: readonly ChatMessage[],
  instruction: string | null,
): string | SystemBlock[] | undefined => {
  const blocks: SystemBlock[] = [];
  let hoisted = 0;
  for (const m of messages) {
    if (!isHoisted(m)) continue;
    const own = blocksOf(m);
    if (own.length === 0) continue;
    if (hoisted > 0) own[0] = { ...own[0]!, text: `\n${own[0]!.text}` };
    hoisted += 1;
    blocks.push(...own);
  }
  const hinted = blocks.some((b) => b.cache_control !== undefined);
  if (instruction !== null)
    blocks.push({ type: 'text', text: blocks.length > 0 ? `\n\n${instruction}` : instruction });
  if (blocks.length === 0) return undefined;
  return hinted ? blocks : blocks.map((b) => b.text).join('');
};

/** SPEC 4.1 rule 6 structured output: a system instruction quoting the schema; the reply is not validated. */
export const responseFormatInstruction = (format: unknown): string | null => {
  if (!isObject(format)) return null;
  if (format.type === 'json_object') return 'Respond with a single valid JSON object and nothing else.';
  if (format.type === 'json_schema') {
    const spec = isObject(format.json_schema) ? format.json_schema : {};
    const schema = spec.schema ?? {};
    const name = typeof spec.name === 'string' ? ` named ${spec.name}` : '';
    return `Respond with a single valid JSON object and nothing else. It must conform to this JSON schema${name}:\n${JSON.stringify(schema)}`;
  }
  return null;
};
