import type { SseEvent } from '../../lib/sse.js';
import type { CanonicalChunk } from '../contract.js';
import { sseEvents, type UpstreamBody } from '../http.js';
import { StreamFailure } from '../provider.js';
import { finishReasonOf, isObject, mergeStreamUsage, serviceTierOf, usageOf } from './usage.js';

/** An upstream SSE event decoded: its name (from `event:` or the JSON's own type) and its JSON. */
export interface MessagesEvent {
  type: string;
  data: Record<string, unknown>;
}

export const decodeEvent = (e: SseEvent): MessagesEvent => {
  let data: unknown;
  try {
    data = JSON.parse(e.data);
  } catch {
    throw new StreamFailure('decode', 'upstream sent an undecodable stream frame');
  }
  if (!isObject(data)) throw new StreamFailure('decode', 'upstream sent an undecodable stream frame');
  const type = typeof data.type === 'string' ? data.type : (e.event ?? '');
  return { type, data };
};

/** The upstream's in-band error: its type (e.g. overloaded_error) and message. */
export const inBandError = (data: Record<string, unknown>): { type: string; message: string } => {
  const err = isObject(data.error) ? data.error : {};
  return {
    type: typeof err.type === 'string' ? err.type : 'api_error',
    message: typeof err.message === 'string' ? err.message : JSON.stringify(data),
  };
};

type OpenBlock =
  | { kind: 'text' }
  | { kind: 'thinking' }
  | { kind: 'tool'; ordinal: number; argued: boolean }
  | { kind: 'skip' };

/**
 * SPEC 4.1 rule 7 and 4.2 rule 6, one event at a time. Tool-call ordinals count the client's tool
 * blocks only, from 0, whatever their block position, as the buffered reply's tool_calls do. A
 * server-tool block (the upstream ran the tool itself) is not a tool call the client can answer: it
 * takes no ordinal and its argument deltas have no tool call to land in on either dialect (the
 * primary wire has no tool call without id, type and name). A tool call whose arguments never came
 * as fragments (a tool without parameters) closes with `{}`, the arguments its buffered reply states.
 */
export class ChunkMapper {
  private readonly blocks = new Map<number, OpenBlock>();
  private ordinals = 0;
  private startUsage: unknown;
  stopped = false;

  map(event: MessagesEvent): CanonicalChunk[] {
    const d = event.data;
    switch (event.type) {
      case 'message_start': {
        const message = isObject(d.message) ? d.message : {};
        this.startUsage = message.usage;
        const opening = usageOf(message.usage);
        const tier = serviceTierOf(message.usage);
        return [
          {
            delta: { role: 'assistant' },
            ...(opening ? { openingUsage: opening } : {}),
            ...(tier ? { serviceTier: tier } : {}),
          },
        ];
      }
      case 'content_block_start':
        return this.start(
          typeof d.index === 'number' ? d.index : -1,
          isObject(d.content_block) ? d.content_block : {},
        );
      case 'content_block_delta':
        return this.delta(typeof d.index === 'number' ? d.index : -1, isObject(d.delta) ? d.delta : {});
      case 'content_block_stop': {
        const open = this.blocks.get(typeof d.index === 'number' ? d.index : -1);
        if (open?.kind === 'thinking') return [{ delta: {}, block: { type: 'thinking_stop' } }];
        if (open?.kind === 'tool' && !open.argued) {
          open.argued = true;
          return [{ delta: { tool_calls: [{ index: open.ordinal, function: { arguments: '{}' } }] } }];
        }
        return [];
      }
      case 'message_delta': {
        const delta = isObject(d.delta) ? d.delta : {};
        const usage = mergeStreamUsage(this.startUsage, d.usage);
        const tier = serviceTierOf(this.startUsage) ?? serviceTierOf(d.usage);
        return [
          {
            delta: {},
            finishReason: finishReasonOf(delta.stop_reason) ?? 'stop',
            stopSequence: typeof delta.stop_sequence === 'string' ? delta.stop_sequence : null,
          },
          // The terminal usage chunk the gateway synthesizes (SPEC 4.1 rule 5).
          ...(usage ? [{ delta: {}, usage, ...(tier ? { serviceTier: tier } : {}) }] : []),
        ];
      }
      case 'message_stop':
        this.stopped = true;
        return [];
      case 'error': {
        const err = inBandError(d);
        throw new StreamFailure('in_band', err.message, err.type);
      }
      default:
        // ping and event kinds added later carry nothing a chunk needs.
        return [];
    }
  }

  private start(index: number, block: Record<string, unknown>): CanonicalChunk[] {
    switch (block.type) {
      case 'text': {
        this.blocks.set(index, { kind: 'text' });
        const text = typeof block.text === 'string' ? block.text : '';
        return [{ delta: text ? { content: text } : {}, block: { type: 'text_start' } }];
      }
      case 'thinking': {
        this.blocks.set(index, { kind: 'thinking' });
        const text = typeof block.thinking === 'string' ? block.thinking : '';
        return [{ delta: text ? { reasoning_content: text } : {}, block: { type: 'thinking_start' } }];
      }
      case 'redacted_thinking':
        this.blocks.set(index, { kind: 'skip' });
        return [
          {
            delta: {},
            block: { type: 'redacted_thinking', data: typeof block.data === 'string' ? block.data : '' },
          },
        ];
      case 'tool_use': {
        const ordinal = this.ordinals++;
        // The input arrives as input_json_delta fragments; a start that already holds it sends it whole.
        const input =
          isObject(block.input) && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
        this.blocks.set(index, { kind: 'tool', ordinal, argued: input !== '' });
        return [
          {
            delta: {
              tool_calls: [
                {
                  index: ordinal,
                  id: typeof block.id === 'string' ? block.id : '',
                  type: 'function',
                  function: { name: typeof block.name === 'string' ? block.name : '', arguments: input },
                },
              ],
            },
          },
        ];
      }
      default:
        this.blocks.set(index, { kind: 'skip' });
        return [];
    }
  }

  private delta(index: number, delta: Record<string, unknown>): CanonicalChunk[] {
    const open = this.blocks.get(index);
    switch (delta.type) {
      case 'text_delta':
        return typeof delta.text === 'string' && open?.kind === 'text'
          ? [{ delta: { content: delta.text } }]
          : [];
      case 'thinking_delta':
        return typeof delta.thinking === 'string' && open?.kind === 'thinking'
          ? [{ delta: { reasoning_content: delta.thinking } }]
          : [];
      case 'signature_delta':
        return typeof delta.signature === 'string' && open?.kind === 'thinking'
          ? [{ delta: { reasoning_signature: delta.signature } }]
          : [];
      case 'input_json_delta':
        if (typeof delta.partial_json !== 'string' || open?.kind !== 'tool' || delta.partial_json === '')
          return [];
        open.argued = true;
        return [
          { delta: { tool_calls: [{ index: open.ordinal, function: { arguments: delta.partial_json } }] } },
        ];
      default:
        return [];
    }
  }
}

/**
 * Decoded SSE events of an upstream body; read failures and the size cap throw StreamFailure. The
 * stream ends at message_stop (what follows is drained by sseEvents, the connection kept).
 */
export async function* upstreamEvents(body: UpstreamBody, maxBytes: number): AsyncGenerator<MessagesEvent> {
  for await (const e of sseEvents(body, maxBytes, isMessageStop)) yield decodeEvent(e);
}

const isMessageStop = (e: SseEvent): boolean =>
  // A JSON string value cannot hold this unescaped: only the event's own type matches.
  e.event === 'message_stop' || e.data.includes('"type":"message_stop"');

/**
 * Canonical chunks from the event the adapter already read on. A stream that ends before
 * message_stop was cut short and fails like any other read failure (SPEC 4.1 rule 5).
 */
export async function* messagesChunks(
  first: MessagesEvent,
  rest: AsyncIterator<MessagesEvent>,
  release: () => void,
): AsyncGenerator<CanonicalChunk> {
  const mapper = new ChunkMapper();
  try {
    let event: MessagesEvent | undefined = first;
    while (event !== undefined && !mapper.stopped) {
      yield* mapper.map(event);
      if (mapper.stopped) break;
      const next = await rest.next();
      event = next.done ? undefined : next.value;
    }
    if (!mapper.stopped) throw new StreamFailure('read', 'upstream stream ended before message_stop');
  } finally {
    release();
  }
}
