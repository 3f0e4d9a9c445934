import { AnalyticsError, type AnalyticsStore } from '../../analytics/port.js';
import type { Bus, BusMessage } from '../../events/bus.js';
import { decodeTraceMessage, TRACE_MESSAGE_MAX_BYTES } from '../../events/envelopes/trace-records.js';
import type { TraceRecord } from '../../traces/model.js';
import { BatchedConsumer, type Held } from '../batched-consumer.js';
import { DEFAULT_RETRY, type RetryPolicy, withRetries } from '../ingest/retry.js';
import { traceRows, writeTraceRows } from './write.js';

/**
 * The trace projector (ARCHITECTURE.md "Storage and the flow of data", SPEC 4.3, 6): a durable
 * consumer of `svc.traces.>` that writes the records into ClickHouse in batches and acks a message
 * only once its records are durable. A batch that cannot be written is left for redelivery (the
 * bus brings it back after ack_wait) and dead-lettered on its last delivery (`insert_exhausted`);
 * a message that cannot be read, or whose records name another tenant than its subject, is
 * dead-lettered at once (`invalid_event`), as is one whose rows the store refuses as they are
 * (`malformed_row`, found by writing a refused batch message by message). Writing the same records twice is harmless (write.ts).
 */

export const TRACE_PROJECTOR = 'trace-projector';

export interface TraceProjectorOptions {
  bus: Bus;
  analytics: AnalyticsStore;
  consumerName?: string;
  ackWaitMs?: number;
  maxDeliveries?: number;
  /** A batch is written once it holds this many records, or flushIntervalMs after its first. */
  flushRecords?: number;
  flushIntervalMs?: number;
  fetchBatch?: number;
  retry?: RetryPolicy;
  onError?: (err: unknown, context: string) => void;
  /** After each batch is acked: records written and messages settled (metrics, tests). */
  onFlushed?: (stats: { records: number; messages: number }) => void;
}

export interface TraceProjectorStats {
  received: number;
  written: number;
  deadLettered: number;
  flushes: number;
}

/** Bytes per pull: several messages of the largest size a trace message may have. */
const FETCH_BYTES = 8 * TRACE_MESSAGE_MAX_BYTES;

/** `svc.traces.<org>.<trace>.<id>`: the org and trace tokens. */
const subjectScope = (subject: string): { org: string; trace: string } | null => {
  const parts = subject.split('.');
  if (parts.length !== 5 || parts[0] !== 'svc' || parts[1] !== 'traces') return null;
  return { org: parts[2]!, trace: parts[3]! };
};

export class TraceProjector extends BatchedConsumer<TraceRecord[]> {
  private readonly o: Required<Omit<TraceProjectorOptions, 'onFlushed'>> &
    Pick<TraceProjectorOptions, 'onFlushed'>;
  private readonly counters: TraceProjectorStats = { received: 0, written: 0, deadLettered: 0, flushes: 0 };

  constructor(options: TraceProjectorOptions) {
    const o = {
      consumerName: TRACE_PROJECTOR,
      ackWaitMs: 30_000,
      maxDeliveries: 5,
      flushRecords: 20_000,
      flushIntervalMs: 250,
      // Trace messages run to hundreds of KB (a trace's records of one export): a pull is bounded by
      // bytes as well, so it stays far below what JetStream buffers for one client (64 MiB), past
      // which it cuts the connection and every message in flight waits out ack_wait.
      fetchBatch: 64,
      retry: DEFAULT_RETRY,
      onError: () => {},
      ...options,
    };
    super({
      bus: o.bus,
      consumerName: o.consumerName,
      filter: 'svc.traces.>',
      consume: {
        ackWaitMs: o.ackWaitMs,
        maxDeliveries: o.maxDeliveries,
        batchSize: o.fetchBatch,
        maxInFlight: o.fetchBatch * 8,
        maxBytes: FETCH_BYTES,
        dlqReason: 'insert_exhausted',
        onError: (err) => o.onError(err, 'trace consumer'),
      },
      flushWeight: o.flushRecords,
      flushIntervalMs: o.flushIntervalMs,
      onError: o.onError,
    });
    this.o = o;
  }

  stats(): TraceProjectorStats {
    return { ...this.counters };
  }

  protected async accept(m: BusMessage): Promise<{ item: TraceRecord[]; weight: number } | null> {
    this.counters.received++;
    const scope = subjectScope(m.subject);
    const decoded = decodeTraceMessage(m.data);
    const detail = !scope
      ? `unexpected subject ${m.subject}`
      : !decoded.ok
        ? decoded.detail
        : decoded.message.org_id !== scope.org || decoded.message.trace_id !== scope.trace
          ? 'the records name another organization or trace than the subject'
          : null;
    if (detail !== null || !decoded.ok) {
      this.o.onError(new Error(detail ?? 'invalid'), `invalid_event: ${m.subject}`);
      this.counters.deadLettered++;
      await m.deadLetter('invalid_event');
      return null;
    }
    return { item: decoded.message.records, weight: decoded.message.records.length };
  }

  protected async write(batch: Held<TraceRecord[]>[]): Promise<void> {
    const rows = traceRows(
      (function* () {
        for (const b of batch) yield* b.item;
      })(),
      new Date(),
    );
    try {
      await withRetries(
        this.o.retry,
        () => writeTraceRows(this.o.analytics, rows),
        (err, again) => this.o.onError(err, `write trace records${again ? '; retrying' : ''}`),
        (err) => !(err instanceof AnalyticsError) || err.retryable,
      );
    } catch (err) {
      // The store refused these rows as they are (not a store that is down): each message alone,
      // so one record cannot keep the rest of the batch out.
      if (err instanceof AnalyticsError && !err.retryable) {
        if (batch.length > 1) {
          for (const one of batch) await this.write([one]);
          return;
        }
        // Alone and refused: the same records can never be written, so redelivery cannot help.
        this.o.onError(err, `malformed_row: ${batch[0]!.message.subject}`);
        this.counters.deadLettered++;
        await batch[0]!.message.deadLetter('malformed_row');
        return;
      }
      this.lastError = err;
      // Left for redelivery; on the last delivery the bus dead-letters it (dlqReason above).
      await Promise.allSettled(
        batch.map((b) => {
          if (b.message.deliveryCount < this.o.maxDeliveries) return b.message.nak(1_000);
          this.counters.deadLettered++;
          return b.message.deadLetter('insert_exhausted');
        }),
      );
      return;
    }
    this.lastError = null;
    this.counters.flushes++;
    const records = rows.spans.length + rows.events.length + rows.artifacts.length;
    this.counters.written += records;
    await Promise.allSettled(batch.map((b) => b.message.ack()));
    this.o.onFlushed?.({ records, messages: batch.length });
  }
}
