import type { AnalyticsStore } from '../../analytics/port.js';
import type { Bus } from '../../events/bus.js';
import type { ObjectStore } from '../../objects/port.js';
import type { FlushTimings, RequestLoggedHook } from './flush.js';
import type { IngestMetrics } from './metrics.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js';

export const INGEST_CONSUMER = 'ingest';

export interface IngestConsumerOptions {
  bus: Bus;
  analytics: AnalyticsStore;
  objects: ObjectStore;
  metrics: IngestMetrics;
  consumerName?: string;
  ackWaitMs?: number;
  maxDeliveries?: number;
  /** Messages fetched per round trip, and held unsettled at most. */
  fetchBatch?: number;
  maxInFlight?: number;
  /** A flush takes at most this many requests; a smaller batch waits at most flushIntervalMs. */
  flushRows?: number;
  flushIntervalMs?: number;
  /**
   * Flushes in progress at once, so one packs (file system) while another inserts (the analytics
   * engine) and another emits its audit events (bus); a second starts only with a full batch.
   */
  maxConcurrentFlushes?: number;
  retry?: RetryPolicy;
  concurrency?: number;
  /** SVC_INGEST_DURABILITY_SAMPLE_STRIDE. */
  durabilitySampleStride?: unknown;
  /**
   * The settle hook point: runs for every request after its write is durable and before its ack
   * (the wallet settles here). It runs again on redelivery, so it must be idempotent by request_id;
   * a throw leaves the message unacked, and on its last delivery dead-letters it as process_error.
   */
  onRequestLogged?: RequestLoggedHook;
  onError?: (err: unknown, context: string) => void;
}

export interface IngestStats {
  received: number;
  committed: number;
  leftUnacked: number;
  deadLettered: number;
  flushes: number;
  timings: FlushTimings & { ackMs: number };
}

export type ResolvedOptions = Required<
  Omit<IngestConsumerOptions, 'onRequestLogged' | 'durabilitySampleStride'>
>;

/**
 * Defaults sized for one process on a small machine: four flushes of 4,000 requests in progress
 * (their pack writes, inserts and audit publishes overlap; a flush alone is mostly waiting on fsync,
 * the chdb worker or the bus) and 20,000 messages held at most (about 120 MB of 2 KB-body envelopes
 * with their parsed form), well inside a 30 s ack_wait. A partial batch waits up to 500 ms: each
 * flush costs the embedded engine about 35 ms of CPU whatever its size (a part per table, the
 * per-minute rollup, then merges; measured with bench:ingest), so flushing a trickle twice a second
 * rather than ten times keeps that near 70 µs a request at 1,000 requests/s, while a request still
 * becomes queryable within about a second.
 */
export const resolveOptions = (options: IngestConsumerOptions): ResolvedOptions => ({
  consumerName: options.consumerName ?? INGEST_CONSUMER,
  ackWaitMs: options.ackWaitMs ?? 30_000,
  maxDeliveries: options.maxDeliveries ?? 5,
  fetchBatch: options.fetchBatch ?? 1_000,
  maxInFlight: options.maxInFlight ?? 20_000,
  flushRows: options.flushRows ?? 4_000,
  flushIntervalMs: options.flushIntervalMs ?? 500,
  maxConcurrentFlushes: options.maxConcurrentFlushes ?? 4,
  retry: options.retry ?? DEFAULT_RETRY,
  concurrency: options.concurrency ?? 32,
  onError: options.onError ?? (() => {}),
  bus: options.bus,
  analytics: options.analytics,
  objects: options.objects,
  metrics: options.metrics,
});
