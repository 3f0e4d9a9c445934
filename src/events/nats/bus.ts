import {
  AckPolicy,
  connect,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from 'nats';
import {
  type Bus,
  type BusHealth,
  type BusMessage,
  BusUnavailableError,
  type ConsumeOptions,
  type ConsumerHandle,
  DEFAULT_BUS_TIMEOUT_MS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  deadLetterHeaders,
  deadLetterMessageId,
  type MessageHandler,
  type OutgoingMessage,
  type PublishOptions,
  type PublishResult,
  toBytes,
  withDeadline,
} from '../bus.js';
import {
  assertFilter,
  assertSubject,
  DLQ_SUBJECT,
  filterWithin,
  InvalidSubjectError,
  prefixed,
  STREAMS,
  type StreamDefinition,
  streamOf,
  subjectToken,
  unprefixed,
} from '../subjects.js';
import { NatsConsumer } from './consumer.js';
import {
  CONSUMER_NOT_FOUND,
  isApiError,
  STREAM_NOT_FOUND,
  toNatsHeaders,
  unavailable,
  userHeaders,
} from './wire.js';

/** NATS JetStream adapter of the bus port. */

export interface NatsBusOptions {
  servers: string | string[];
  /** Stream names are `<prefix><REQUESTS|AUDIT|TRACES|DLQ>`. */
  streamNamePrefix?: string;
  /** Test runs sharing one server put their subject tree under this first token. */
  subjectPrefix?: string;
  timeoutMs?: number;
  duplicateWindowMs?: number;
  replicas?: number;
  connectionName?: string;
}

/** Only the fields this adapter manages; others (set by an operator) are left as they are. */
const sameConfig = (have: StreamConfig, want: Partial<StreamConfig>): boolean =>
  JSON.stringify(have.subjects) === JSON.stringify(want.subjects) &&
  have.max_age === want.max_age &&
  have.duplicate_window === want.duplicate_window &&
  have.num_replicas === want.num_replicas;

export class NatsBus implements Bus {
  readonly adapter = 'nats' as const;
  private readonly subjectPrefix: string;
  private readonly streamNamePrefix: string;
  private readonly timeoutMs: number;
  private readonly consumers = new Set<NatsConsumer>();
  private readonly clients = new WeakMap<NatsConnection, JetStreamClient>();
  private connecting: Promise<NatsConnection> | undefined;
  private closed = false;

  constructor(private readonly options: NatsBusOptions) {
    this.subjectPrefix = options.subjectPrefix ?? '';
    if (this.subjectPrefix) subjectToken('subject prefix', this.subjectPrefix);
    this.streamNamePrefix = options.streamNamePrefix ?? 'SVC_';
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BUS_TIMEOUT_MS;
  }

  /**
   * Connects on first use rather than in the constructor so a process can start (and spool) while
   * NATS is down; once connected the client reconnects by itself for ever.
   */
  connection(): Promise<NatsConnection> {
    if (this.closed) return Promise.reject(new BusUnavailableError('bus is closed'));
    if (!this.connecting) {
      const attempt = connect({
        servers: this.options.servers,
        name: this.options.connectionName ?? 'svc',
        timeout: this.timeoutMs,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1_000,
        // Otherwise every publish builds two Error objects (a stack for a timeout that rarely
        // comes): about 5 % of a gateway's CPU per request record. A timeout is still
        // reported, as a BusUnavailableError naming the operation.
        noAsyncTraces: true,
      });
      const bounded = withDeadline(attempt, this.timeoutMs, 'connect to NATS').catch((err: unknown) => {
        if (this.connecting === bounded) this.connecting = undefined;
        throw unavailable('connect to NATS', err);
      });
      // A connection that arrives after its deadline, or after close, is not kept.
      attempt
        .then((nc) => {
          if (this.connecting !== bounded || this.closed) void nc.close();
          else
            void nc.closed().then(() => {
              if (this.connecting === bounded) this.connecting = undefined;
            });
        })
        .catch(() => {});
      this.connecting = bounded;
    }
    return this.connecting;
  }

  /** Bounded, and any sign of a missing server reported as BusUnavailableError. */
  run<T>(what: string, work: (nc: NatsConnection) => Promise<T>): Promise<T> {
    const job = this.connection().then(work);
    return withDeadline(job, this.timeoutMs, what).catch((err: unknown) => {
      throw unavailable(what, err);
    });
  }

  private streamName(def: StreamDefinition): string {
    return `${this.streamNamePrefix}${def.name}`;
  }

  private streamConfig(def: StreamDefinition): Partial<StreamConfig> {
    return {
      name: this.streamName(def),
      subjects: [prefixed(this.subjectPrefix, def.subjects)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: def.maxAgeMs === undefined ? 0 : nanos(def.maxAgeMs),
      duplicate_window: nanos(this.options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS),
      num_replicas: this.options.replicas ?? 1,
    };
  }

  async ensureStreams(): Promise<void> {
    await this.run('ensure streams', async (nc) => {
      const jsm = await nc.jetstreamManager({ timeout: this.timeoutMs });
      for (const def of STREAMS) await this.ensureStream(jsm, this.streamConfig(def));
    });
  }

  private async ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig>): Promise<void> {
    const name = cfg.name!;
    try {
      const info = await jsm.streams.info(name);
      if (!sameConfig(info.config, cfg)) await jsm.streams.update(name, { ...info.config, ...cfg });
      return;
    } catch (err) {
      if (!isApiError(err, STREAM_NOT_FOUND)) throw err;
    }
    try {
      await jsm.streams.add(cfg);
    } catch (err) {
      // Another process created it between our look and our add: converge on the same config.
      const info = await jsm.streams.info(name).catch(() => {
        throw err;
      });
      if (!sameConfig(info.config, cfg)) await jsm.streams.update(name, { ...info.config, ...cfg });
    }
  }

  /** Removes this bus's streams and with them their consumers (test clean-up, `svc` tooling). */
  async deleteStreams(): Promise<void> {
    await this.run('delete streams', async (nc) => {
      const jsm = await nc.jetstreamManager({ timeout: this.timeoutMs });
      for (const def of STREAMS) {
        await jsm.streams.delete(this.streamName(def)).catch((err: unknown) => {
          if (!isApiError(err, STREAM_NOT_FOUND)) throw err;
        });
      }
    });
  }

  async publish(subject: string, data: Uint8Array | string, options: PublishOptions): Promise<PublishResult> {
    if (!streamOf(assertSubject(subject)))
      throw new InvalidSubjectError(`no stream holds subject ${subject}`);
    return this.publishRaw(
      prefixed(this.subjectPrefix, subject),
      toBytes(data),
      options.messageId,
      options.headers,
    );
  }

  /**
   * Every publish goes out before the first ack is awaited: one connection keeps them in order, so
   * the stream stores them in the order given, and the server dedupes each by its Nats-Msg-Id.
   */
  async publishMany(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
    for (const m of messages) {
      if (!streamOf(assertSubject(m.subject)))
        throw new InvalidSubjectError(`no stream holds subject ${m.subject}`);
    }
    if (messages.length === 0) return [];
    return this.run('publish many', async (nc) => {
      const js = this.jetstream(nc);
      const acks = await Promise.allSettled(
        messages.map((m) =>
          js.publish(prefixed(this.subjectPrefix, m.subject), toBytes(m.data), {
            msgID: m.messageId,
            headers: toNatsHeaders(m.headers),
            timeout: this.timeoutMs,
          }),
        ),
      );
      return acks.map((a) => {
        if (a.status === 'rejected') throw a.reason;
        return { duplicate: a.value.duplicate, seq: a.value.seq };
      });
    });
  }

  private jetstream(nc: NatsConnection): JetStreamClient {
    let js = this.clients.get(nc);
    if (!js) {
      js = nc.jetstream({ timeout: this.timeoutMs });
      this.clients.set(nc, js);
    }
    return js;
  }

  publishRaw(
    subject: string,
    data: Uint8Array,
    messageId: string,
    headers: Record<string, string> | undefined,
  ): Promise<PublishResult> {
    return this.run('publish', async (nc) => {
      const ack = await this.jetstream(nc).publish(subject, data, {
        msgID: messageId,
        headers: toNatsHeaders(headers),
        timeout: this.timeoutMs,
      });
      return { duplicate: ack.duplicate, seq: ack.seq };
    });
  }

  async consume(
    name: string,
    filterSubject: string,
    handler: MessageHandler,
    options: ConsumeOptions,
  ): Promise<ConsumerHandle> {
    subjectToken('consumer name', name);
    assertFilter(filterSubject);
    const def = STREAMS.find((s) => filterWithin(s.subjects, filterSubject));
    if (!def) throw new InvalidSubjectError(`filter ${filterSubject} does not lie within one stream`);
    const stream = this.streamName(def);
    const filter = prefixed(this.subjectPrefix, filterSubject);
    const batchSize = options.batchSize ?? 100;
    const maxInFlight = options.maxInFlight ?? batchSize * 4;
    await this.run('create consumer', async (nc) => {
      const jsm = await nc.jetstreamManager({ timeout: this.timeoutMs });
      // Redelivery is unbounded on the server: the adapter counts deliveries itself and moves an
      // exhausted message to the dead letters, which a server-side max_deliver would leave stuck.
      const wanted = { ack_wait: nanos(options.ackWaitMs), max_ack_pending: maxInFlight, max_deliver: -1 };
      try {
        const info = await jsm.consumers.info(stream, name);
        if (info.config.filter_subject !== filter) {
          throw new Error(`consumer ${name} exists with filter ${info.config.filter_subject}, not ${filter}`);
        }
        if (
          info.config.ack_wait !== wanted.ack_wait ||
          info.config.max_ack_pending !== wanted.max_ack_pending
        ) {
          await jsm.consumers.update(stream, name, wanted);
        }
      } catch (err) {
        if (!isApiError(err, CONSUMER_NOT_FOUND)) throw err;
        await jsm.consumers.add(stream, {
          durable_name: name,
          filter_subject: filter,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ...wanted,
        });
      }
    });
    const consumer = new NatsConsumer(this, stream, name, handler, { ...options, batchSize });
    this.consumers.add(consumer);
    consumer.start();
    return {
      name,
      close: async () => {
        this.consumers.delete(consumer);
        await consumer.stop();
      },
    };
  }

  /** Publishes the dead letter (awaiting its ack) and only then terminates the original. */
  async deadLetter(consumer: string, msg: JsMsg, reason: string, deliveries: number): Promise<void> {
    const messageId = msg.headers?.get('Nats-Msg-Id') ?? `seq:${msg.info.streamSequence}`;
    await this.publishRaw(
      prefixed(this.subjectPrefix, DLQ_SUBJECT),
      msg.data,
      deadLetterMessageId(consumer, messageId),
      {
        ...userHeaders(msg.headers),
        ...deadLetterHeaders({
          reason,
          subject: unprefixed(this.subjectPrefix, msg.subject),
          messageId,
          deliveries,
          consumer,
          seq: msg.info.streamSequence,
        }),
      },
    );
    msg.term();
  }

  toMessage(consumer: string, msg: JsMsg): BusMessage {
    const messageId = msg.headers?.get('Nats-Msg-Id') ?? `seq:${msg.info.streamSequence}`;
    return {
      subject: unprefixed(this.subjectPrefix, msg.subject),
      data: msg.data,
      messageId,
      headers: userHeaders(msg.headers),
      deliveryCount: msg.info.deliveryCount,
      seq: msg.info.streamSequence,
      // A lost ack only means one more delivery, which at-least-once allows; waiting for the
      // server's confirmation of every ack would halve consume throughput.
      ack: async () => msg.ack(),
      nak: async (delayMs?: number) => msg.nak(delayMs),
      deadLetter: (reason: string) => this.deadLetter(consumer, msg, reason, msg.info.deliveryCount),
    };
  }

  async health(): Promise<BusHealth> {
    const started = Date.now();
    try {
      await this.run('health', async (nc) => {
        await (await nc.jetstreamManager({ timeout: this.timeoutMs })).getAccountInfo();
      });
      return { ok: true, adapter: 'nats', latencyMs: Date.now() - started };
    } catch (err) {
      return { ok: false, adapter: 'nats', error: (err as Error).message };
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
    this.consumers.clear();
    const pending = this.connecting;
    this.closed = true;
    this.connecting = undefined;
    const nc = await pending?.catch(() => undefined);
    // drain() sends the acks still buffered before closing.
    await nc?.drain().catch(() => nc.close());
  }
}
