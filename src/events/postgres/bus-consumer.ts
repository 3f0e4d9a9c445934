import { type BusMessage, type ConsumeOptions, DEFAULT_DLQ_REASON, type MessageHandler } from '../bus.js';
import { unprefixed } from '../subjects.js';
import type { Pool } from './pool.js';

/** What a consumer asks of the bus that made it. */
export interface ConsumerHost {
  run<T>(what: string, work: () => Promise<T>): Promise<T>;
  moveToDeadLetter(consumer: string, row: LeasedRow, reason: string): Promise<void>;
  keepListening(): void;
}

export interface LeasedRow {
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
// A consumer that orders by its own means (ConsumeOptions.perSubjectOrder false) leases in
// sequence order without holding a subject back.
const SUBJECT_ORDER = `
     AND NOT EXISTS (
       SELECT 1 FROM svc_bus_deliveries e
        WHERE e.consumer = d.consumer AND e.subject = d.subject AND e.seq <> d.seq
          AND (e.seq < d.seq OR e.visible_at > now()))`;
const leaseSql = (perSubjectOrder: boolean) => `
WITH picked AS (
  SELECT d.consumer, d.seq, d.delivery_count FROM svc_bus_deliveries d
   WHERE d.consumer = $1 AND d.visible_at <= now()${perSubjectOrder ? SUBJECT_ORDER : ''}
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
// Unnamed on purpose, unlike the checkpoint statements (runner.ts): svc_bus_deliveries is a queue
// that is empty one minute and holds a backlog the next, and a plan cached for the empty table would
// keep scanning it whole until the next ANALYZE invalidated it.
const LEASE_SQL = leaseSql(true);
const LEASE_UNORDERED_SQL = leaseSql(false);

/** One durable consumer's fetch loop in this process. */
export class PostgresConsumer {
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** seq -> lease expiry (ms), for messages handed out and not yet settled. */
  private readonly inFlight = new Map<number, number>();
  /** seq -> when a message this consumer nak'd with a delay is visible again (ms). */
  private readonly delayed = new Map<number, number>();
  private ackQueue: { seq: number; done: () => void; fail: (err: unknown) => void }[] = [];
  private ackScheduled = false;
  private readonly batchSize: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly bus: ConsumerHost,
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
      const leasedAt = Date.now();
      try {
        rows = (
          await this.bus.run('bus lease', () =>
            this.pool.query<LeasedRow>(
              this.options.perSubjectOrder === false ? LEASE_UNORDERED_SQL : LEASE_SQL,
              [this.name, limit, this.options.ackWaitMs, this.options.maxDeliveries],
            ),
          )
        ).rows;
      } catch (err) {
        this.report(err);
        await this.sleep(this.pollMs);
        continue;
      }
      // Delayed rows visible when this lease looked are leased now, by this process or another, or
      // held behind their subject: either way no longer this consumer's to wake for.
      for (const [seq, at] of this.delayed) if (at <= leasedAt) this.delayed.delete(seq);
      for (const row of rows) {
        if (this.stopped) break;
        await this.dispatch(row);
      }
      if (rows.length === limit || this.woken) continue;
      await this.sleep(this.idleDelay());
    }
  }

  private async dispatch(row: LeasedRow): Promise<void> {
    this.delayed.delete(row.seq);
    if (row.exhausted) {
      await this.deadLetter(row, this.options.dlqReason ?? DEFAULT_DLQ_REASON).catch((err: unknown) =>
        this.report(err),
      );
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
        if (delayMs > 0) this.delayed.set(row.seq, Date.now() + delayMs);
        this.wake();
      },
      deadLetter: async (reason: string) => {
        if (settle()) await this.deadLetter(row, reason);
      },
    };
  }

  /** Moves the row to the dead letters; like an ack, that may free later messages of its subject. */
  private async deadLetter(row: LeasedRow, reason: string): Promise<void> {
    await this.bus.moveToDeadLetter(this.name, row, reason);
    this.wake();
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

  /**
   * Until the next of this consumer's own leases expires or nak delays ends, capped by the poll
   * interval. Known here, not asked of PostgreSQL (that was one more statement per wake-up, per
   * consumer, on every request of `npm start`): what other processes of the same consumer lease or
   * delay, they wake for themselves, and should one die, the poll finds its rows once visible.
   */
  private idleDelay(): number {
    this.bus.keepListening();
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const at of [...this.delayed.values(), ...this.inFlight.values()]) next = Math.min(next, at);
    return Number.isFinite(next) ? Math.max(5, Math.min(this.pollMs, next - now + 5)) : this.pollMs;
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
