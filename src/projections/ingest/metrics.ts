import { Counter, Histogram, type Registry } from 'prom-client';
import type { AnalyticsErrorKind } from '../../analytics/port.js';

/** Tables the ingest consumer writes, as named in metric labels and in migrations/clickhouse. */
export const INGEST_TABLES = {
  requests: 'requests',
  usageLines: 'request_usage_lines',
  costLines: 'request_cost_lines',
} as const;
export type IngestTable = (typeof INGEST_TABLES)[keyof typeof INGEST_TABLES];
export const TABLE_NAMES: readonly IngestTable[] = Object.values(INGEST_TABLES);

/** SPEC 6 dead-letter reasons, in the spec's order. */
export const DLQ_REASONS = [
  'invalid_event',
  'malformed_row',
  'process_error',
  'body_pack_exhausted',
  'insert_exhausted',
  'audit_emit',
] as const;
export type DlqReason = (typeof DLQ_REASONS)[number];

/** Errors that are not AnalyticsError (a bug, a driver surprise) are counted as `unknown`. */
export type ClickHouseErrorKind = AnalyticsErrorKind | 'unknown';

/** The ingest metrics of SPEC 6, names and labels exactly as written there. */
export interface IngestMetrics {
  insertRetries: Counter;
  dlq: Counter<'reason'>;
  clickhouseErrors: Counter<'kind'>;
  batchInsertDuration: Histogram<'table' | 'result'>;
  bodyPacks: Counter;
  bodyPackFrames: Histogram;
  bodyPackBytes: Histogram;
  durableWrites: Counter<'table'>;
  suppressedWrites: Counter<'table'>;
  pricedWithoutCostLines: Counter;
  durabilityReadFailures: Counter;
  durabilityReadsSkipped: Counter;
}

export const ingestMetrics = (registry: Registry): IngestMetrics => {
  const registers = [registry];
  const m: IngestMetrics = {
    insertRetries: new Counter({
      name: 'svc_ingest_insert_retries_total',
      help: 'ClickHouse batch inserts tried again after a failure',
      registers,
    }),
    dlq: new Counter({
      name: 'svc_ingest_dlq_total',
      help: 'Messages moved to svc.dlq.requests (envelopes and their body chunks), by reason',
      labelNames: ['reason'] as const,
      registers,
    }),
    clickhouseErrors: new Counter({
      name: 'svc_ingest_clickhouse_errors_total',
      help: 'Failed ClickHouse inserts and reads, by error kind',
      labelNames: ['kind'] as const,
      registers,
    }),
    batchInsertDuration: new Histogram({
      name: 'svc_ingest_batch_insert_duration_seconds',
      help: 'Duration of one batch insert into one table, by result (ok or error)',
      labelNames: ['table', 'result'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    bodyPacks: new Counter({
      name: 'svc_ingest_body_packs_total',
      help: 'Body pack objects written to the object store',
      registers,
    }),
    bodyPackFrames: new Histogram({
      name: 'svc_ingest_body_pack_frames',
      help: 'Body frames per pack object',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
      registers,
    }),
    bodyPackBytes: new Histogram({
      name: 'svc_ingest_body_pack_bytes',
      help: 'Size of each body pack object in bytes',
      buckets: [1024, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864],
      registers,
    }),
    durableWrites: new Counter({
      name: 'svc_ingest_clickhouse_durable_writes_total',
      help: 'Rows whose insert ClickHouse confirmed (and, on sampled flushes, that were read back)',
      labelNames: ['table'] as const,
      registers,
    }),
    suppressedWrites: new Counter({
      name: 'svc_ingest_clickhouse_suppressed_writes_total',
      help: 'Rows confirmed inserted but missing on read-back; any nonzero value is lost cost evidence',
      labelNames: ['table'] as const,
      registers,
    }),
    pricedWithoutCostLines: new Counter({
      name: 'svc_ingest_priced_requests_without_cost_lines_total',
      help: 'Successful requests billed as priced that carried no cost line',
      registers,
    }),
    durabilityReadFailures: new Counter({
      name: 'svc_ingest_durability_read_failures_total',
      help: 'Durability read-backs that could not be run; the flush is left unacked',
      registers,
    }),
    durabilityReadsSkipped: new Counter({
      name: 'svc_ingest_durability_reads_skipped_total',
      help: 'Flushes not read back because of SVC_INGEST_DURABILITY_SAMPLE_STRIDE',
      registers,
    }),
  };
  // Alerting on "stays 0" needs the series to exist before the first write.
  for (const table of TABLE_NAMES) {
    m.suppressedWrites.inc({ table }, 0);
    m.durableWrites.inc({ table }, 0);
  }
  for (const reason of DLQ_REASONS) m.dlq.inc({ reason }, 0);
  return m;
};
