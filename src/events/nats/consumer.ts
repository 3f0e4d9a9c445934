import type { ConsumerMessages, JsMsg, NatsConnection } from 'nats';
import { type BusMessage, type ConsumeOptions, DEFAULT_DLQ_REASON, type MessageHandler } from '../bus.js';

/** What a consumer asks of the bus that made it. */
export interface NatsConsumerHost {
  run<T>(what: string, work: (nc: NatsConnection) => Promise<T>): Promise<T>;
  deadLetter(consumer: string, msg: JsMsg, reason: string, deliveries: number): Promise<void>;
  toMessage(consumer: string, msg: JsMsg): BusMessage;
}

/** One durable pull consumer's loop in this process. */
export class NatsConsumer {
  private stopped = false;
  private messages: ConsumerMessages | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly bus: NatsConsumerHost,
    private readonly stream: string,
    private readonly name: string,
    private readonly handler: MessageHandler,
    private readonly options: ConsumeOptions & { batchSize: number },
  ) {}

  start(): void {
    this.running = this.loop();
  }

  /**
   * The client ends the iterator only after it has yielded the messages already buffered, so the
   * loop keeps iterating (without handling them: they come back after ack_wait) until it ends.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const consumer = await this.bus.run('get consumer', (nc) =>
          nc.jetstream().consumers.get(this.stream, this.name),
        );
        this.messages = await consumer.consume(
          this.options.maxBytes !== undefined
            ? // The client takes one limit or the other; with bytes it asks for up to 100 messages a pull.
              { max_bytes: this.options.maxBytes }
            : { max_messages: this.options.batchSize },
        );
        if (this.stopped) this.messages.stop();
        for await (const msg of this.messages) {
          if (!this.stopped) await this.dispatch(msg);
        }
      } catch (err) {
        this.options.onError?.(err);
      }
      // The iterator ends on close, or when the server lost the consumer: look again shortly.
      if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  private async dispatch(msg: JsMsg): Promise<void> {
    try {
      if (msg.info.deliveryCount > this.options.maxDeliveries) {
        // This delivery is one past the budget and was never handed to the handler.
        const reason = this.options.dlqReason ?? DEFAULT_DLQ_REASON;
        await this.bus.deadLetter(this.name, msg, reason, this.options.maxDeliveries);
      } else {
        await this.handler(this.bus.toMessage(this.name, msg));
      }
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}
