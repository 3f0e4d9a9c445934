import type {
  Bus,
  BusHealth,
  ConsumerHandle,
  OutgoingMessage,
  PublishOptions,
  PublishResult,
} from '../bus.js';
import { BusUnavailableError, toBytes } from '../bus.js';

/**
 * A bus for the publisher's unit tests whose availability a test scripts: up, down (every publish
 * rejects with BusUnavailableError), refusing chosen message ids, slow or hanging. It keeps the
 * duplicate-window contract by message id. The adapters themselves are covered by the bus
 * contract suite; the publisher's Postgres int test runs against a real one.
 */
export class ScriptedBus implements Bus {
  readonly adapter = 'postgres' as const;
  mode: 'up' | 'down' | 'hang' = 'up';
  delayMs = 0;
  /** Publishes that get through before the bus goes down by itself (a crash mid-drain). */
  budget = Number.POSITIVE_INFINITY;
  refuse: (messageId: string) => boolean = () => false;
  /** Every publish call, in call order, whatever its outcome. */
  readonly calls: string[] = [];
  /** Sizes of the publishMany batches, in call order. */
  readonly batches: number[] = [];
  /** Messages stored, in order; duplicates are not stored again. */
  readonly stored: { subject: string; messageId: string; data: Uint8Array }[] = [];
  private readonly seqById = new Map<string, number>();

  async ensureStreams(): Promise<void> {}

  async publish(subject: string, data: Uint8Array | string, options: PublishOptions): Promise<PublishResult> {
    this.calls.push(options.messageId);
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.mode === 'hang') return new Promise<PublishResult>(() => {});
    if (this.budget <= 0) this.mode = 'down';
    if (this.mode === 'down') throw new BusUnavailableError('scripted: bus down');
    if (this.refuse(options.messageId)) throw new Error(`scripted: ${options.messageId} refused`);
    this.budget--;
    const seen = this.seqById.get(options.messageId);
    if (seen !== undefined) return { duplicate: true, seq: seen };
    this.stored.push({ subject, messageId: options.messageId, data: toBytes(data) });
    this.seqById.set(options.messageId, this.stored.length);
    return { duplicate: false, seq: this.stored.length };
  }

  /** Message by message under the same script, so a bus going down mid-batch stores a prefix. */
  async publishMany(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
    this.batches.push(messages.length);
    const results: PublishResult[] = [];
    for (const m of messages) results.push(await this.publish(m.subject, m.data, m));
    return results;
  }

  async consume(): Promise<ConsumerHandle> {
    throw new Error('ScriptedBus does not consume');
  }

  async health(): Promise<BusHealth> {
    return { ok: this.mode === 'up', adapter: this.adapter };
  }

  async close(): Promise<void> {}

  /** Stored envelopes (not chunks): their message ids are request ids. */
  envelopeIds(): string[] {
    return this.stored.filter((m) => !m.messageId.includes(':')).map((m) => m.messageId);
  }
}
