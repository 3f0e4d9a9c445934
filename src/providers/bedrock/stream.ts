import type { CanonicalChunk } from '../contract.js';
import { StreamFailure } from '../provider.js';
import type { RuntimeEvent } from './eventstream.js';
import { exceptionName, redactMessage } from './exceptions.js';
import { finishReasonOf, usageOf } from './reply.js';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** An exception frame as the terminal stream failure: its name and its redacted message. */
export const exceptionStreamFailure = (
  event: Extract<RuntimeEvent, { kind: 'exception' }>,
): StreamFailure => {
  const name = exceptionName(event.name, undefined) ?? 'UnknownException';
  const message = redactMessage(event.message);
  return new StreamFailure('in_band', message === '' ? name : `${name}: ${message}`, name);
};

/**
 * SPEC 4.7 rule 6, one event at a time. The runtime numbers content blocks in one sequence for
 * text and tools; tool_calls indexes count tool blocks only, so a tool block after text is still
 * tool_calls[0].
 */
export class ChunkMapper {
  private readonly toolIndex = new Map<number, number>();
  stopped = false;

  map(event: RuntimeEvent): CanonicalChunk | null {
    if (event.kind === 'exception') throw exceptionStreamFailure(event);
    const body = event.body;
    switch (event.type) {
      case 'messageStart':
        return { delta: { role: 'assistant' } };
      case 'contentBlockStart': {
        const start = isObject(body.start) ? body.start : undefined;
        const use = start && isObject(start.toolUse) ? start.toolUse : undefined;
        if (!use) return null;
        const index = this.toolIndex.size;
        this.toolIndex.set(blockIndex(body), index);
        return {
          delta: {
            tool_calls: [
              {
                index,
                id: typeof use.toolUseId === 'string' ? use.toolUseId : '',
                type: 'function',
                function: { name: typeof use.name === 'string' ? use.name : '', arguments: '' },
              },
            ],
          },
        };
      }
      case 'contentBlockDelta': {
        const delta = isObject(body.delta) ? body.delta : {};
        if (typeof delta.text === 'string') return { delta: { content: delta.text } };
        if (isObject(delta.toolUse)) {
          const index = this.toolIndex.get(blockIndex(body));
          if (index === undefined)
            throw new StreamFailure('decode', 'upstream sent tool input for a block it never opened');
          const input = typeof delta.toolUse.input === 'string' ? delta.toolUse.input : '';
          return { delta: { tool_calls: [{ index, function: { arguments: input } }] } };
        }
        // Reasoning and other deltas have no representation on this route.
        return null;
      }
      case 'messageStop':
        this.stopped = true;
        return { delta: {}, finishReason: finishReasonOf(body.stopReason) };
      case 'metadata': {
        const usage = usageOf(body.usage);
        return usage ? { delta: {}, usage } : null;
      }
      default:
        // contentBlockStop and event types added later carry nothing a chunk needs.
        return null;
    }
  }
}

const blockIndex = (body: Record<string, unknown>): number =>
  typeof body.contentBlockIndex === 'number' ? body.contentBlockIndex : 0;

/**
 * Canonical chunks of a ConverseStream reply, starting from the event the adapter already read.
 * A stream that ends before messageStop was cut short and fails like any other read failure.
 */
export async function* converseChunks(
  first: RuntimeEvent,
  rest: AsyncIterator<RuntimeEvent>,
  release: () => void,
): AsyncGenerator<CanonicalChunk> {
  const mapper = new ChunkMapper();
  try {
    let event: RuntimeEvent | undefined = first;
    while (event !== undefined) {
      const chunk = mapper.map(event);
      if (chunk) yield chunk;
      const next = await rest.next();
      event = next.done ? undefined : next.value;
    }
    if (!mapper.stopped) throw new StreamFailure('read', 'upstream stream ended before messageStop');
  } finally {
    release();
  }
}
