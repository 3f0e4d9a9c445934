import pg from 'pg';
import {
  type Bus,
  type BusHealth,
  type BusMessage,
  BusUnavailableError,
  type ConsumeOptions,
  type ConsumerHandle,
  DEFAULT_BUS_TIMEOUT_MS,
  DEFAULT_DLQ_REASON,
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
  filterToRegex,
  filterWithin,
  InvalidSubjectError,
  prefixed,
  STREAMS,
  streamOf,
  subjectToken,
  unprefixed,
} from '../subjects.js';
import type { Pool } from './pool.js';

/** Postgres-table adapter of the bus port (migrations/postgres/0002_bus.sql). */

export const BUS_NOTIFY_CHANNEL = 'svc_bus';

export interface PostgresBusOptions {
  /** For the LISTEN connection; without it consumers only poll. */
  connectionString?: string;
  /** Mirrors the NATS adapter's option so one contract suite drives both. */
  subjectPrefix?: string;
  timeoutMs?: number;
  duplicateWindowMs?: number;
  /** Longest an idle consumer sleeps between looks when no notification arrives. */
  pollMs?: number;
  housekeepingMs?: number;
}

interface LeasedRow {
  seq: number;
  delivery_count: number;
  exhausted: boolean;
  subject: string;
  message_id: string;
  /** Base64. */
  data: string;
  headers: Record<string, string>;
}

// Payloads travel as base64 (the protocol carries text only): a third smaller than bytea's hex
// form, and quicker to decode on the consumer's event loop.
// Ordering per subject: a row is handed out only when no other unsettled row of its subject is
// earlier, and none of its subject is currently leased or nak-delayed. Rows that have used up
// their deliveries are leased without counting, flagged `exhausted`, and dead-lettered by the loop.
const LEASE_SQL = `
WITH picked AS (
  SELECT d.consumer, d.seq, d.delivery_count FROM svc_bus_deliveries d
   WHERE d.consumer = $1 AND d.visible_at <= now()
     AND NOT EXISTS (
       SELECT 1 FROM svc_bus_deliveries e
        WHERE e.consumer = d.consumer AND e.subject = d.subject AND e.seq <> d.seq
          AND (e.seq < d.seq OR e.visible_at > now()))
   ORDER BY d.seq LIMIT $2
   FOR UPDATE OF d SKIP LOCKED
), leased AS (
  UPDATE svc_bus_deliveries d
     SET delivery_count = CASE WHEN picked.delivery_count >= $4 THEN d.delivery_count ELSE d.delivery_count + 1 END,
         visible_at = now() + $3 * interval '1 millisecond'
    FROM picked
   WHERE d.consumer = picked.consumer AND d.seq = picked.seq
  RETURNING d.seq, d.delivery_count, picked.delivery_count >= $4 AS exhausted
)
SELECT l.seq, l.delivery_count, l.exhausted, m.subject, m.message_id, encode(m.data, 'base64') AS data, m.headers
  FROM leased l JOIN svc_bus_messages m ON m.seq = l.seq
 ORDER BY l.seq`;

/** pg sends a Buffer inside an array as bytea; a plain Uint8Array would go as text. */
const toBuffer = (data: Uint8Array | string): Buffer => {
  const bytes = toBytes(data);
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
};

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

const isUnavailable = (err: unknown): boolean => {
  if (err instanceof BusUnavailableError) return true;
  if (err instanceof AggregateError) return err.errors.some(isUnavailable);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08'))) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout/i.test(
    err.message,
  );
};

export class PostgresBus implements Bus {
  readonly adapter = 'postgres' as const;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly windowMs: number;
  private readonly pollMs: number;
  private readonly consumers = new Set<PostgresConsumer>();
  private listener: pg.Client | null = null;
  private listening: Promise<void> | null = null;
  private notifyScheduled = false;
  private housekeeping: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly options: PostgresBusOptions = {},
  ) {
    this.prefix = options.subjectPrefix ?? '';
    if (this.prefix) subjectToken('subject prefix', this.prefix);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BUS_TIMEOUT_MS;
    this.windowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
    this.pollMs = options.pollMs ?? 1_000;
  }

  /** Runs `work` bounded by the timeout, reporting a lost or silent server as BusUnavailableError. */
  run<T>(what: string, work: () => Promise<T>): Promise<T> {
    return withDeadline(work(), this.timeoutMs, what).catch((err: unknown) => {
      if (err instanceof BusUnavailableError) throw err;
      if (isUnavailable(err))
        throw new BusUnavailableError(`${what}: ${(err as Error).message}`, { cause: err });
      throw err;
    });
  }

  /** The tables come from migrations; streams here only need their retention enforced. */
  async ensureStreams(): Promise<void> {
    await this.run('bus ensureStreams', () => this.pool.query('SELECT 1 FROM svc_bus_messages LIMIT 0'));
    if (!this.housekeeping && !this.closed) {
      this.housekeeping = setInterval(
        () => void this.tidy().catch(() => {}),
        this.options.housekeepingMs ?? 60_000,
      );
      this.housekeeping.unref();
    }
  }

  /** Drops expired duplicate-window entries and messages past their stream's max age. */
  async tidy(): Promise<void> {
    await this.pool.query('DELETE FROM svc_bus_dedupe WHERE expires_at < now()');
    for (const s of STREAMS) {
      if (s.maxAgeMs === undefined) continue;
      await this.pool.query(
        `WITH gone AS (DELETE FROM svc_bus_messages WHERE stream = $1 AND published_at < now() - $2 * interval '1 millisecond'
                       RETURNING seq)
         DELETE FROM svc_bus_deliveries d USING gone WHERE d.seq = gone.seq`,
        [s.key, s.maxAgeMs],
      );
    }
  }

  async publish(subject: string, data: Uint8Array | string, options: PublishOptions): Promise<PublishResult> {
    const stream = streamOf(assertSubject(subject));
    if (!stream) throw new InvalidSubjectError(`no stream holds subject ${subject}`);
    return this.publishRaw(stream.key, prefixed(this.prefix, subject), toBytes(data), options);
  }

  private async publishRaw(stream: string, subject: string, data: Uint8Array, options: PublishOptions) {
    if (this.closed) throw new BusUnavailableError('bus is closed');
    const { rows } = await this.run('bus publish', () =>
      this.pool.query<{ published_seq: number; duplicate: boolean }>(
        'SELECT published_seq, duplicate FROM svc_bus_publish($1, $2, $3, $4, $5, $6)',
        [stream, subject, options.messageId, data, JSON.stringify(options.headers ?? {}), this.windowMs],
      ),
    );
    const row = rows[0]!;
    if (!row.duplicate) this.notifySoon();
    return { duplicate: row.duplicate, seq: row.published_seq };
  }

  /** One statement for the whole batch (migrations/postgres/0009_bus_publish_many.sql): all or nothing. */
  async publishMany(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
    const streams: string[] = [];
    for (const m of messages) {
      const stream = streamOf(assertSubject(m.subject));
      if (!stream) throw new InvalidSubjectError(`no stream holds subject ${m.subject}`);
      streams.push(stream.key);
    }
    if (messages.length === 0) return [];
    if (this.closed) throw new BusUnavailableError('bus is closed');
    const { rows } = await this.run('bus publish many', () =>
      this.pool.query<{ ord: number; published_seq: number; duplicate: boolean }>(
        `SELECT ord, published_seq, duplicate
           FROM svc_bus_publish_many($1::text[], $2::text[], $3::text[], $4::bytea[], $5::jsonb[], $6)`,
        [
          streams,
          messages.map((m) => prefixed(this.prefix, m.subject)),
          messages.map((m) => m.messageId),
          messages.map((m) => toBuffer(m.data)),
          messages.map((m) => JSON.stringify(m.headers ?? {})),
          this.windowMs,
        ],
      ),
    );
    if (rows.length !== messages.length)
      throw new Error(`bus publish many: ${rows.length} results for ${messages.length} messages`);
    const results = new Array<PublishResult>(messages.length);
    for (const r of rows) results[r.ord - 1] = { duplicate: r.duplicate, seq: Number(r.published_seq) };
    if (rows.some((r) => !r.duplicate)) this.notifySoon();
    return results;
  }

  /**
   * One NOTIFY per event-loop turn however many publishes committed in it: a NOTIFY inside each
   * publish transaction would serialise their commits on the notification queue lock.
   */
  notifySoon(): void {
    for (const c of this.consumers) c.wake();
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      this.pool.query(`NOTIFY ${BUS_NOTIFY_CHANNEL}`).catch(() => {});
    });
  }

  async consume(
    name: string,
    filterSubject: string,
    handler: MessageHandler,
    options: ConsumeOptions,
  ): Promise<ConsumerHandle> {
    if (this.closed) throw new BusUnavailableError('bus is closed');
    subjectToken('consumer name', name);
    // Same rule as JetStream, where a consumer belongs to one stream.
    if (!STREAMS.some((s) => filterWithin(s.subjects, assertFilter(filterSubject)))) {
      throw new InvalidSubjectError(`filter ${filterSubject} does not lie within one stream`);
    }
    const filter = prefixed(this.prefix, filterSubject);
    const { rows } = await this.run('bus consumer create', () =>
      this.pool.query<{ filter: string }>('SELECT svc_bus_create_consumer($1, $2, $3) AS filter', [
        name,
        filter,
        filterToRegex(filter),
      ]),
    );
    if (rows[0]!.filter !== filter) {
      throw new Error(`consumer ${name} exists with filter ${rows[0]!.filter}, not ${filter}`);
    }
    this.ensureListener();
    const consumer = new PostgresConsumer(this, this.pool, name, handler, options, this.pollMs, this.prefix);
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

  /** Dead letter of (consumer, seq); atomic with dropping the delivery. */
  async moveToDeadLetter(consumer: string, row: LeasedRow, reason: string): Promise<void> {
    const headers = deadLetterHeaders({
      reason,
      subject: unprefixed(this.prefix, row.subject),
      messageId: row.message_id,
      deliveries: row.delivery_count,
      consumer,
      seq: row.seq,
    });
    await this.run('bus dead letter', () =>
      this.pool.query('SELECT svc_bus_dead_letter($1, $2, $3, $4, $5, $6, $7)', [
        consumer,
        row.seq,
        'dlq',
        prefixed(this.prefix, DLQ_SUBJECT),
        deadLetterMessageId(consumer, row.message_id),
        JSON.stringify(headers),
        this.windowMs,
      ]),
    );
    this.notifySoon();
  }

  private ensureListener(): void {
    if (this.listener || this.listening || !this.options.connectionString || this.closed) return;
    this.listening = (async () => {
      // Bounded connect: close() waits for this attempt and must not hang on a silent server.
      const client = new pg.Client({
        connectionString: this.options.connectionString,
        connectionTimeoutMillis: this.timeoutMs,
        // Named like every svc session: the embedded server's last user is told by it.
        application_name: 'svc-bus-listen',
      });
      client.on('error', () => {
        if (this.listener === client) this.listener = null;
        void client.end().catch(() => {});
      });
      client.on('notification', () => {
        for (const c of this.consumers) c.wake();
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${BUS_NOTIFY_CHANNEL}`);
        if (this.closed) await client.end();
        else this.listener = client;
      } catch {
        await client.end().catch(() => {});
      }
    })().finally(() => {
      this.listening = null;
    });
  }

  /** Called by idle consumers: a lost LISTEN connection is re-made while polling covers the gap. */
  keepListening(): void {
    if (!this.listener) this.ensureListener();
  }

  async health(): Promise<BusHealth> {
    const started = Date.now();
    try {
      await this.run('bus health', () => this.pool.query('SELECT 1 FROM svc_bus_consumers LIMIT 0'));
      return { ok: true, adapter: 'postgres', latencyMs: Date.now() - started };
    } catch (err) {
      return { ok: false, adapter: 'postgres', error: (err as Error).message };
    }
  }

  /** Stops consumers and the listener; the pool belongs to the caller. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.housekeeping);
    await Promise.all([...this.consumers].map((c) => c.stop()));
    this.consumers.clear();
    await this.listening;
    await this.listener?.end().catch(() => {});
    this.listener = null;
  }
}

/** One durable consumer's fetch loop in this process. */
class PostgresConsumer {
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** seq -> lease expiry (ms), for messages handed out and not yet settled. */
  private readonly inFlight = new Map<number, number>();
  private ackQueue: { seq: number; done: () => void; fail: (err: unknown) => void }[] = [];
  private ackScheduled = false;
  private readonly batchSize: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly bus: PostgresBus,
    private readonly pool: Pool,
    private readonly name: string,
    private readonly handler: MessageHandler,
    private readonly options: ConsumeOptions,
    private readonly pollMs: number,
    private readonly prefix: string,
  ) {
    this.batchSize = options.batchSize ?? 100;
    this.maxInFlight = options.maxInFlight ?? this.batchSize * 4;
  }

  start(): void {
    this.running = this.loop();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    await this.flushAcks();
  }

  private report(err: unknown): void {
    this.options.onError?.(err);
  }

  private capacity(): number {
    const now = Date.now();
    for (const [seq, expiry] of this.inFlight) if (expiry <= now) this.inFlight.delete(seq);
    return Math.min(this.batchSize, this.maxInFlight - this.inFlight.size);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      const limit = this.capacity();
      if (limit <= 0) {
        await this.sleep(this.options.ackWaitMs);
        continue;
      }
      let rows: LeasedRow[];
      try {
        rows = (
          await this.bus.run('bus lease', () =>
            this.pool.query<LeasedRow>(LEASE_SQL, [
              this.name,
              limit,
              this.options.ackWaitMs,
              this.options.maxDeliveries,
            ]),
          )
        ).rows;
      } catch (err) {
        this.report(err);
        await this.sleep(this.pollMs);
        continue;
      }
      for (const row of rows) {
        if (this.stopped) break;
        await this.dispatch(row);
      }
      if (rows.length === limit || this.woken) continue;
      await this.sleep(await this.idleDelay());
    }
  }

  private async dispatch(row: LeasedRow): Promise<void> {
    if (row.exhausted) {
      await this.bus
        .moveToDeadLetter(this.name, row, this.options.dlqReason ?? DEFAULT_DLQ_REASON)
        .catch((err: unknown) => this.report(err));
      return;
    }
    this.inFlight.set(row.seq, Date.now() + this.options.ackWaitMs);
    try {
      await this.handler(this.toMessage(row));
    } catch (err) {
      this.report(err);
    }
  }

  private toMessage(row: LeasedRow): BusMessage {
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      this.inFlight.delete(row.seq);
      return true;
    };
    const data = Buffer.from(row.data, 'base64');
    return {
      subject: unprefixed(this.prefix, row.subject),
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      messageId: row.message_id,
      headers: row.headers,
      deliveryCount: row.delivery_count,
      seq: row.seq,
      ack: async () => {
        if (settle()) await this.ack(row.seq);
      },
      nak: async (delayMs = 0) => {
        if (!settle()) return;
        // Guarded by the delivery count so a late nak cannot shorten someone else's newer lease.
        await this.bus.run('bus nak', () =>
          this.pool.query(
            `UPDATE svc_bus_deliveries SET visible_at = now() + $4 * interval '1 millisecond'
              WHERE consumer = $1 AND seq = $2 AND delivery_count = $3`,
            [this.name, row.seq, row.delivery_count, delayMs],
          ),
        );
        this.wake();
      },
      deadLetter: async (reason: string) => {
        if (settle()) await this.bus.moveToDeadLetter(this.name, row, reason);
      },
    };
  }

  /** Acks are batched into one DELETE per event-loop turn; each ack resolves when it commits. */
  private ack(seq: number): Promise<void> {
    return new Promise<void>((done, fail) => {
      this.ackQueue.push({ seq, done, fail });
      if (this.ackQueue.length >= this.batchSize) void this.flushAcks();
      else if (!this.ackScheduled) {
        this.ackScheduled = true;
        setImmediate(() => {
          this.ackScheduled = false;
          void this.flushAcks();
        });
      }
    });
  }

  private async flushAcks(): Promise<void> {
    const batch = this.ackQueue;
    if (batch.length === 0) return;
    this.ackQueue = [];
    try {
      await this.bus.run('bus ack', () =>
        this.pool.query('DELETE FROM svc_bus_deliveries WHERE consumer = $1 AND seq = ANY($2::bigint[])', [
          this.name,
          batch.map((a) => a.seq),
        ]),
      );
      for (const a of batch) a.done();
      // Settled rows may have been holding back later messages of their subjects.
      this.wake();
    } catch (err) {
      for (const a of batch) a.fail(err);
    }
  }

  /** Until the next lease expires or nak delay ends, capped by the poll interval. */
  private async idleDelay(): Promise<number> {
    this.bus.keepListening();
    try {
      const { rows } = await this.bus.run('bus idle check', () =>
        this.pool.query<{ ms: number | null }>(
          `SELECT ceil(extract(epoch FROM min(visible_at) - now()) * 1000)::float8 AS ms
             FROM svc_bus_deliveries WHERE consumer = $1 AND visible_at > now()`,
          [this.name],
        ),
      );
      const ms = rows[0]?.ms;
      return ms === null || ms === undefined ? this.pollMs : Math.max(5, Math.min(this.pollMs, ms + 5));
    } catch {
      return this.pollMs;
    }
  }

  private async sleep(ms: number): Promise<void> {
    if (this.stopped || this.woken) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = null;
  }
}
