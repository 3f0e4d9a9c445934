import pg from 'pg';
import {
  type Bus,
  type BusHealth,
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
  filterToRegex,
  filterWithin,
  InvalidSubjectError,
  prefixed,
  STREAMS,
  streamOf,
  subjectToken,
  unprefixed,
} from '../subjects.js';
import { type LeasedRow, PostgresConsumer } from './bus-consumer.js';
import { namedStatement, type Pool } from './pool.js';

/** Postgres-table adapter of the bus port (migrations/postgres/0002_bus.sql). */

export const BUS_NOTIFY_CHANNEL = 'svc_bus';

const publishOne = namedStatement(
  'svc_bus_publish',
  'SELECT published_seq, duplicate FROM svc_bus_publish($1, $2, $3, $4, $5, $6)',
);
const publishMany = namedStatement(
  'svc_bus_publish_many',
  `SELECT ord, published_seq, duplicate
     FROM svc_bus_publish_many($1::text[], $2::text[], $3::text[],
       ARRAY(SELECT substring($4::bytea FROM p.start FOR p.len)
               FROM unnest($5::integer[], $6::integer[]) WITH ORDINALITY AS p (start, len, ord)
              ORDER BY p.ord),
       $7::jsonb[], $8)`,
);

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
  /** Each consumer of this process, with the key of the stream its filter lies in. */
  private readonly consumers = new Map<PostgresConsumer, string>();
  /** Streams published to since the last NOTIFY. */
  private readonly notifyStreams = new Set<string>();
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
        publishOne([
          stream,
          subject,
          options.messageId,
          data,
          JSON.stringify(options.headers ?? {}),
          this.windowMs,
        ]),
      ),
    );
    const row = rows[0]!;
    if (!row.duplicate) this.notifySoon([stream]);
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
    // The payloads travel as one bytea parameter, which node-postgres sends in binary, cut back into
    // messages by offset and length in the statement: a bytea[] parameter goes as text, every byte
    // as two hex digits, which doubled the bytes on the wire and cost both ends the encoding.
    const payloads = messages.map((m) => toBuffer(m.data));
    const starts = new Array<number>(payloads.length);
    const lengths = new Array<number>(payloads.length);
    let at = 1;
    payloads.forEach((p, i) => {
      starts[i] = at;
      lengths[i] = p.length;
      at += p.length;
    });
    const { rows } = await this.run('bus publish many', () =>
      this.pool.query<{ ord: number; published_seq: number; duplicate: boolean }>(
        publishMany([
          streams,
          messages.map((m) => prefixed(this.prefix, m.subject)),
          messages.map((m) => m.messageId),
          Buffer.concat(payloads, at - 1),
          starts,
          lengths,
          messages.map((m) => JSON.stringify(m.headers ?? {})),
          this.windowMs,
        ]),
      ),
    );
    if (rows.length !== messages.length)
      throw new Error(`bus publish many: ${rows.length} results for ${messages.length} messages`);
    const results = new Array<PublishResult>(messages.length);
    for (const r of rows) results[r.ord - 1] = { duplicate: r.duplicate, seq: Number(r.published_seq) };
    const written = rows.filter((r) => !r.duplicate).map((r) => streams[r.ord - 1]!);
    if (written.length > 0) this.notifySoon(written);
    return results;
  }

  /**
   * One NOTIFY per event-loop turn however many publishes committed in it: a NOTIFY inside each
   * publish transaction would serialise their commits on the notification queue lock. Its payload
   * names the streams written (`requests,audit`): a consumer wakes only for its own stream, so a
   * request's record and audit event wake one consumer each, not every consumer of every process.
   */
  notifySoon(streams: readonly string[]): void {
    this.wake(streams);
    for (const stream of streams) this.notifyStreams.add(stream);
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      const payload = [...this.notifyStreams].join(',');
      this.notifyStreams.clear();
      this.pool.query('SELECT pg_notify($1, $2)', [BUS_NOTIFY_CHANNEL, payload]).catch(() => {});
    });
  }

  /** Wakes the consumers of these streams (of every stream: null, a notification without a payload). */
  private wake(streams: readonly string[] | null): void {
    for (const [consumer, stream] of this.consumers)
      if (!streams || streams.includes(stream)) consumer.wake();
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
    const home = STREAMS.find((s) => filterWithin(s.subjects, assertFilter(filterSubject)));
    if (!home) {
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
    this.consumers.set(consumer, home.key);
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
    this.notifySoon(['dlq']);
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
      client.on('notification', (msg) => {
        this.wake(msg.payload ? msg.payload.split(',') : null);
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
    await Promise.all([...this.consumers.keys()].map((c) => c.stop()));
    this.consumers.clear();
    await this.listening;
    await this.listener?.end().catch(() => {});
    this.listener = null;
  }
}
