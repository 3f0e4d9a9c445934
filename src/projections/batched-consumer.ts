import {
  type Bus,
  type BusMessage,
  BusUnavailableError,
  type ConsumeOptions,
  type ConsumerHandle,
} from '../events/bus.js';

/**
 * A durable bus consumer that takes messages in, holds them, and writes them in batches: a batch is
 * written once its weight (messages, records) reaches `flushWeight`, or `flushIntervalMs` after its
 * first message. Subclasses say what a message holds (or dead-letter it) and write a batch; this
 * class subscribes (again every 2 s while the bus is away), flushes, and on stop writes what it
 * holds and waits for the writes in flight. The trace projector and the audit log use it.
 */

export interface BatchedConsumerOptions {
  bus: Bus;
  consumerName: string;
  filter: string;
  consume: ConsumeOptions;
  flushWeight: number;
  flushIntervalMs: number;
  /** Batches written one after another, in the order taken (the audit log's arrival order). */
  sequential?: boolean;
  onError: (err: unknown, context: string) => void;
}

export interface Held<T> {
  message: BusMessage;
  item: T;
}

const SUBSCRIBE_RETRY_MS = 2_000;

export abstract class BatchedConsumer<T> {
  private handle: ConsumerHandle | null = null;
  private batch: Held<T>[] = [];
  private weight = 0;
  private timer: NodeJS.Timeout | undefined;
  private resubscribe: NodeJS.Timeout | undefined;
  private readonly flights = new Set<Promise<void>>();
  private stopping = false;
  /** The last write failure; cleared by a write that succeeds. For /healthz. */
  lastError: unknown = null;

  constructor(private readonly base: BatchedConsumerOptions) {}

  /** The item a message holds and its weight, or null once the subclass dead-lettered it. */
  protected abstract accept(message: BusMessage): Promise<{ item: T; weight: number } | null>;

  /** Writes and settles a batch; a failure it leaves unsettled comes back after ack_wait. */
  protected abstract write(batch: Held<T>[]): Promise<void>;

  async start(): Promise<void> {
    if (this.stopping) return;
    try {
      this.handle = await this.base.bus.consume(
        this.base.consumerName,
        this.base.filter,
        (m) => this.onMessage(m),
        this.base.consume,
      );
      this.lastError = null;
      if (this.stopping) await this.handle.close();
    } catch (err) {
      if (!(err instanceof BusUnavailableError)) throw err;
      this.lastError = err;
      this.base.onError(err, `create the ${this.base.consumerName} consumer; retrying`);
      this.resubscribe = setTimeout(() => void this.start(), SUBSCRIBE_RETRY_MS);
      this.resubscribe.unref();
    }
  }

  /** Stops fetching and writes what it holds; what is not acked comes back after ack_wait. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.resubscribe);
    clearTimeout(this.timer);
    await this.handle?.close();
    this.flush();
    await Promise.allSettled([...this.flights]);
  }

  private async onMessage(m: BusMessage): Promise<void> {
    const accepted = await this.accept(m);
    if (!accepted) return;
    this.batch.push({ message: m, item: accepted.item });
    this.weight += accepted.weight;
    if (this.weight >= this.base.flushWeight) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.base.flushIntervalMs);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.weight = 0;
    const before = this.base.sequential ? Promise.allSettled([...this.flights]) : Promise.resolve();
    const flight = before.then(() => this.write(batch)).finally(() => this.flights.delete(flight));
    this.flights.add(flight);
  }
}
