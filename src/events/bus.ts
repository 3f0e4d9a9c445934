/**
 * Bus port (ARCHITECTURE.md "Storage and the flow of data"; SPEC.md sections 3 and 6). Delivery is
 * at least once: a message is redelivered until acked, and after `maxDeliveries` it is moved to
 * the dead-letter subject. Adapters: NATS JetStream (`nats/bus.ts`) and a Postgres table
 * (`postgres/bus.ts`); `test/contract/bus.contract.ts` holds them to the same behaviour.
 */

export interface PublishOptions {
  /** Publishing the same id again within the duplicate window stores nothing new. */
  messageId: string;
  headers?: Record<string, string>;
}

/** One message of a batch given to `publishMany`. */
export interface OutgoingMessage extends PublishOptions {
  subject: string;
  data: Uint8Array | string;
}

export interface PublishResult {
  /** True when the id was already stored within the window; `seq` is then the original's. */
  duplicate: boolean;
  seq: number;
}

export interface BusMessage {
  /** The subject as published (without any adapter prefix). */
  readonly subject: string;
  readonly data: Uint8Array;
  readonly messageId: string;
  readonly headers: Readonly<Record<string, string>>;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  readonly seq: number;
  /** Done: never delivered to this consumer again. */
  ack(): Promise<void>;
  /** Deliver again, after `delayMs` when given (otherwise as soon as possible). */
  nak(delayMs?: number): Promise<void>;
  /** Publish to the dead-letter subject with `reason`, then drop from this consumer. */
  deadLetter(reason: string): Promise<void>;
}

/**
 * Returning without settling the message is allowed (a batching handler acks later); a message
 * neither acked nor nak'd comes back after `ackWaitMs`. A throw leaves it unacked as well.
 */
export type MessageHandler = (message: BusMessage) => Promise<void>;

export interface ConsumeOptions {
  ackWaitMs: number;
  /** Deliveries before the message is dead-lettered instead of delivered again. */
  maxDeliveries: number;
  /** Messages fetched per round trip. */
  batchSize?: number;
  /**
   * Bytes fetched per round trip at most (JetStream's pull max_bytes; at least the largest message).
   * For large messages: a pull of batchSize of them could pass what the server buffers for one
   * client, which then cuts the connection (a slow consumer) and everything in flight waits out
   * ack_wait. Absent: bounded by batchSize only. On JetStream a pull then asks for up to 100 messages
   * within the bytes; the Postgres-table bus, which holds no server buffer, reads batchSize rows.
   */
  maxBytes?: number;
  /**
   * False: messages of one subject may be in flight together (the audit log orders by arrival and
   * every tenant's events share one subject). Default true: the Postgres-table bus hands out a
   * subject's message only once every earlier one of that subject is settled. JetStream delivers in
   * stream order either way.
   */
  perSubjectOrder?: boolean;
  /** Unsettled messages this consumer holds at most; defaults to 4 x batchSize. */
  maxInFlight?: number;
  /** Reason recorded when redeliveries run out; `max_deliveries` unless the caller names its own. */
  dlqReason?: string;
  /** Failures of the handler or of the fetch loop; the loop itself keeps going. */
  onError?: (err: unknown) => void;
}

export interface ConsumerHandle {
  readonly name: string;
  /** Stops fetching and waits for the running handler; unsettled messages return after ack_wait. */
  close(): Promise<void>;
}

export interface BusHealth {
  ok: boolean;
  adapter: 'nats' | 'postgres';
  latencyMs?: number;
  error?: string;
}

export interface Bus {
  readonly adapter: 'nats' | 'postgres';
  /** Creates or updates the streams; safe to call from every process at start. */
  ensureStreams(): Promise<void>;
  /** Resolves once the message is durably stored; rejects with BusUnavailableError within the timeout. */
  publish(subject: string, data: Uint8Array | string, options: PublishOptions): Promise<PublishResult>;
  /**
   * Publishes a batch in one round trip (or one pipelined burst) and resolves with one result per
   * message, in the order given, once all are durably stored. Messages are stored in the order
   * given, so per-subject order holds within the batch; a message id seen earlier in the window,
   * or earlier in the same batch, is a duplicate as with `publish`. Every subject is checked before
   * anything is sent. On rejection some messages may be stored (JetStream) or none (Postgres):
   * publishing the same batch again is safe, since the ids dedupe. An empty batch resolves to [].
   */
  publishMany(messages: readonly OutgoingMessage[]): Promise<PublishResult[]>;
  /**
   * Durable: a consumer started again with the same name resumes where the previous one stopped.
   * `filterSubject` may use '*' and a final '>'.
   */
  consume(
    name: string,
    filterSubject: string,
    handler: MessageHandler,
    options: ConsumeOptions,
  ): Promise<ConsumerHandle>;
  health(): Promise<BusHealth>;
  close(): Promise<void>;
}

/** Header names a dead letter carries beside the original payload, which is kept byte for byte. */
export const DLQ_HEADERS = {
  reason: 'Svc-Dlq-Reason',
  subject: 'Svc-Dlq-Subject',
  messageId: 'Svc-Dlq-Message-Id',
  deliveries: 'Svc-Dlq-Deliveries',
  consumer: 'Svc-Dlq-Consumer',
  seq: 'Svc-Dlq-Seq',
} as const;

export const DEFAULT_DLQ_REASON = 'max_deliveries';
export const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;
export const DEFAULT_BUS_TIMEOUT_MS = 5_000;

export interface DeadLetterInfo {
  reason: string;
  subject: string;
  messageId: string;
  deliveries: number;
  consumer: string;
  seq: number;
}

export const deadLetterHeaders = (info: DeadLetterInfo): Record<string, string> => ({
  [DLQ_HEADERS.reason]: info.reason,
  [DLQ_HEADERS.subject]: info.subject,
  [DLQ_HEADERS.messageId]: info.messageId,
  [DLQ_HEADERS.deliveries]: String(info.deliveries),
  [DLQ_HEADERS.consumer]: info.consumer,
  [DLQ_HEADERS.seq]: String(info.seq),
});

/** Undefined when the message is not a dead letter. */
export const readDeadLetter = (headers: Readonly<Record<string, string>>): DeadLetterInfo | undefined => {
  const reason = headers[DLQ_HEADERS.reason];
  const subject = headers[DLQ_HEADERS.subject];
  if (reason === undefined || subject === undefined) return undefined;
  return {
    reason,
    subject,
    messageId: headers[DLQ_HEADERS.messageId] ?? '',
    deliveries: Number(headers[DLQ_HEADERS.deliveries] ?? 0),
    consumer: headers[DLQ_HEADERS.consumer] ?? '',
    seq: Number(headers[DLQ_HEADERS.seq] ?? 0),
  };
};

/**
 * The id of a dead letter is derived from the original, so dead-lettering the same delivery twice
 * (the move succeeded, the ack after it was lost) stores one dead letter.
 */
export const deadLetterMessageId = (consumer: string, messageId: string): string =>
  `dlq:${consumer}:${messageId}`;

/** The server did not answer in time or refused the connection: retry later (spool, nak). */
export class BusUnavailableError extends Error {
  readonly retryable = true;
  readonly code = 'bus_unavailable';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BusUnavailableError';
  }
}

/**
 * Rejects with BusUnavailableError when `work` takes longer than `timeoutMs`, so no caller waits on
 * a silent server forever; `work` itself is left to settle (its result is then ignored).
 */
export const withDeadline = <T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new BusUnavailableError(`${what}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  work.catch(() => {});
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
};

const encoder = new TextEncoder();
export const toBytes = (data: Uint8Array | string): Uint8Array =>
  typeof data === 'string' ? encoder.encode(data) : data;
