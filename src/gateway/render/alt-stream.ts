import type { ServiceError } from '../../lib/errors.js';
import { eventFrame } from '../../lib/sse.js';
import type { CanonicalChunk, FinishReason, Usage } from '../../providers/contract.js';
import { altStopReason, altUsage, inputSide } from './alt.js';
import type { ReplyIdentity } from './primary.js';

type Open = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; toolIndex: number };

const frame = (name: string, payload: Record<string, unknown>) =>
  eventFrame(name, JSON.stringify({ type: name, ...payload }));

/**
 * Canonical chunks as the alternate dialect's event stream (SPEC 4.2 rules 5 and 6): message_start,
 * then each content block opened, given its deltas and stopped before the next, then message_delta
 * with the authoritative usage and message_stop; no [DONE]. The message opens at the first content,
 * so message_start states the input-side usage known by then (0 when none was). Blocks follow the
 * upstream's boundaries: adjacent text blocks stay apart, a thinking block gets its signature_delta,
 * redacted thinking opens and closes at once.
 */
export class AltStreamRenderer {
  private opened = false;
  private index = -1;
  private open: Open | null = null;
  private opening: Usage | null = null;
  private serviceTier: unknown;
  private finish: FinishReason | null = null;
  private stopSequence: string | null = null;

  constructor(private readonly who: ReplyIdentity) {}

  chunk(c: CanonicalChunk): string[] {
    if (c.openingUsage) this.opening = c.openingUsage;
    if (c.serviceTier !== undefined) this.serviceTier = c.serviceTier;
    else if (c.raw?.service_tier !== undefined) this.serviceTier = c.raw.service_tier;
    if (c.finishReason) this.finish = c.finishReason;
    if (c.stopSequence) this.stopSequence = c.stopSequence;
    const out: string[] = [];
    const d = c.delta;
    switch (c.block?.type) {
      case 'text_start':
        this.startBlock(out, { kind: 'text' }, { type: 'text', text: '' });
        break;
      case 'thinking_start':
        this.startBlock(out, { kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
        break;
      case 'redacted_thinking':
        this.startBlock(out, null, { type: 'redacted_thinking', data: c.block.data });
        break;
      default:
        break;
    }
    if (d.reasoning_content) {
      if (this.open?.kind !== 'thinking')
        this.startBlock(out, { kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
      out.push(this.delta({ type: 'thinking_delta', thinking: d.reasoning_content }));
    }
    if (d.reasoning_signature) {
      if (this.open?.kind !== 'thinking')
        this.startBlock(out, { kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
      out.push(this.delta({ type: 'signature_delta', signature: d.reasoning_signature }));
    }
    if (c.block?.type === 'thinking_stop' && this.open?.kind === 'thinking') this.stopBlock(out);
    if (d.content) {
      if (this.open?.kind !== 'text') this.startBlock(out, { kind: 'text' }, { type: 'text', text: '' });
      out.push(this.delta({ type: 'text_delta', text: d.content }));
    }
    for (const t of d.tool_calls ?? []) {
      if (t.id) {
        this.startBlock(
          out,
          { kind: 'tool', toolIndex: t.index },
          { type: 'tool_use', id: t.id, name: t.function?.name ?? '', input: {} },
        );
      }
      // A tool call never opened with an id (a server tool's arguments) has no block to land in.
      const args = t.function?.arguments;
      if (args && this.open?.kind === 'tool' && this.open.toolIndex === t.index)
        out.push(this.delta({ type: 'input_json_delta', partial_json: args }));
    }
    return out;
  }

  /** message_delta states the terminal usage; without one, message_start's input counts and output 0. */
  end(usage: Usage | null): string[] {
    const out: string[] = [];
    // A stream with no content opens here, with the terminal counts known.
    if (!this.opened) this.openMessage(out, usage ?? this.opening);
    if (this.open) this.stopBlock(out);
    const terminal = usage ?? inputSide(this.opening);
    out.push(
      frame('message_delta', {
        delta: {
          stop_reason: altStopReason(this.finish, this.stopSequence),
          stop_sequence: this.stopSequence,
        },
        usage: altUsage(terminal, this.serviceTier),
      }),
    );
    out.push(frame('message_stop', {}));
    return out;
  }

  /** A failure after the stream began: one error event with api_error, and the stream ends. */
  error(err: ServiceError): string[] {
    return [frame('error', { error: { type: 'api_error', message: err.message } })];
  }

  private openMessage(out: string[], usage: Usage | null): void {
    this.opened = true;
    out.push(
      frame('message_start', {
        message: {
          id: this.who.id,
          type: 'message',
          role: 'assistant',
          model: this.who.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: altUsage(inputSide(usage), this.serviceTier),
        },
      }),
    );
  }

  private startBlock(out: string[], open: Open | null, block: Record<string, unknown>): void {
    if (!this.opened) this.openMessage(out, this.opening);
    if (this.open) this.stopBlock(out);
    this.index += 1;
    out.push(frame('content_block_start', { index: this.index, content_block: block }));
    this.open = open;
    if (open === null) out.push(frame('content_block_stop', { index: this.index }));
  }

  private stopBlock(out: string[]): void {
    out.push(frame('content_block_stop', { index: this.index }));
    this.open = null;
  }

  private delta(delta: Record<string, unknown>): string {
    return frame('content_block_delta', { index: this.index, delta });
  }
}
