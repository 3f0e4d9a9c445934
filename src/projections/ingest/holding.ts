import type { BusMessage } from '../../events/bus.js';
import { isChunkedBody, type RequestCompleted } from '../../events/envelopes/request-completed.js';
import type { BodySide } from '../../events/subjects.js';
import type { StoredBodies } from './rows.js';

/**
 * What the consumer holds between delivery and flush. Chunks of a request and its envelope may
 * arrive in either order and in different fetches; neither is acked until the envelope's write is
 * durable, so an unfinished request is simply redelivered, chunks included.
 */

export interface HeldEnvelope {
  envelope: RequestCompleted;
  /** The latest delivery; acking it settles the message. */
  message: BusMessage;
  receivedAt: number;
  /** Sides found already packed by an earlier, committed delivery. */
  reused: StoredBodies;
  lookedUp: boolean;
}

export interface HeldChunk {
  message: BusMessage;
  receivedAt: number;
}

export const chunkKey = (side: BodySide, n: number): string => `${side}:${n}`;

const SIDES: readonly BodySide[] = ['req', 'res'];

export class Holding {
  readonly envelopes = new Map<string, HeldEnvelope>();
  /** Request ids of held envelopes whose bodies are all at hand. */
  readonly ready = new Set<string>();
  /** request id -> chunk key -> latest delivery. */
  readonly chunks = new Map<string, Map<string, HeldChunk>>();

  holdEnvelope(envelope: RequestCompleted, message: BusMessage, now: number): void {
    const id = envelope.request_id;
    const held = this.envelopes.get(id);
    if (held) {
      held.message = message;
      held.receivedAt = now;
    } else {
      this.envelopes.set(id, { envelope, message, receivedAt: now, reused: {}, lookedUp: false });
    }
    this.recheck(id);
  }

  holdChunk(requestId: string, side: BodySide, n: number, message: BusMessage, now: number): void {
    let byKey = this.chunks.get(requestId);
    if (!byKey) {
      byKey = new Map();
      this.chunks.set(requestId, byKey);
    }
    byKey.set(chunkKey(side, n), { message, receivedAt: now });
    this.recheck(requestId);
  }

  /** Sides still waiting for chunks (none once ready). */
  missingSides(id: string): BodySide[] {
    const held = this.envelopes.get(id);
    if (!held) return [];
    const byKey = this.chunks.get(id);
    return SIDES.filter((side) => {
      const ref = side === 'req' ? held.envelope.bodies?.request : held.envelope.bodies?.response;
      if (!ref || !isChunkedBody(ref)) return false;
      const reused = held.reused[side];
      if (reused && reused.blake3 === ref.blake3 && reused.byteCount === ref.byte_count) return false;
      for (let n = 0; n < ref.chunks; n++) if (!byKey?.has(chunkKey(side, n))) return true;
      return false;
    });
  }

  recheck(id: string): void {
    if (this.envelopes.has(id) && this.missingSides(id).length === 0) this.ready.add(id);
  }

  /** Chunk payloads of one side in order; undefined when one is missing. */
  chunkData(id: string, side: BodySide, count: number): Uint8Array[] | undefined {
    const byKey = this.chunks.get(id);
    const out: Uint8Array[] = [];
    for (let n = 0; n < count; n++) {
      const c = byKey?.get(chunkKey(side, n));
      if (!c) return undefined;
      out.push(c.message.data);
    }
    return out;
  }

  chunkMessages(id: string): BusMessage[] {
    return [...(this.chunks.get(id)?.values() ?? [])].map((c) => c.message);
  }

  /** Removes the envelope and its chunks, returning what was held. */
  release(id: string): { envelope: HeldEnvelope | undefined; chunks: BusMessage[] } {
    const envelope = this.envelopes.get(id);
    const chunks = this.chunkMessages(id);
    this.envelopes.delete(id);
    this.ready.delete(id);
    this.chunks.delete(id);
    return { envelope, chunks };
  }

  /** Up to `max` ready request ids, oldest first, removed from the ready set. */
  takeReady(max: number): string[] {
    const out: string[] = [];
    for (const id of this.ready) {
      if (out.length >= max) break;
      out.push(id);
    }
    for (const id of out) this.ready.delete(id);
    return out;
  }

  get size(): number {
    return this.envelopes.size;
  }
}
