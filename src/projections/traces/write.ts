import type { AnalyticsRow, AnalyticsStore } from '../../analytics/port.js';
import type {
  TraceArtifactRecord,
  TraceEventRecord,
  TraceRecord,
  TraceSpanRecord,
} from '../../traces/model.js';

/**
 * Trace records into migrations/clickhouse/0003_traces.sql. A write of the same records again
 * (redelivery, an export sent twice) adds copies that readers collapse by id, so the writer needs
 * no memory of what it wrote.
 */

export const TRACE_TABLES = {
  spans: 'trace_spans',
  events: 'trace_events',
  artifacts: 'trace_artifacts',
} as const;

/** A complete span outranks every pending copy of it; later writes outrank earlier ones. */
const COMPLETE = 2 ** 48;

export const spanRow = (s: TraceSpanRecord, ingestedAt: Date): AnalyticsRow => {
  const { record: _record, ...columns } = s;
  return {
    ...columns,
    version: (s.status === 'pending' ? 0 : COMPLETE) + ingestedAt.getTime(),
    ingested_at: ingestedAt.toISOString(),
  };
};

const rowOf = (r: TraceEventRecord | TraceArtifactRecord, ingestedAt: Date): AnalyticsRow => {
  const { record: _record, ...columns } = r;
  return { ...columns, ingested_at: ingestedAt.toISOString() };
};

export interface TraceRows {
  spans: AnalyticsRow[];
  events: AnalyticsRow[];
  artifacts: AnalyticsRow[];
}

export const traceRows = (records: Iterable<TraceRecord>, ingestedAt: Date): TraceRows => {
  const rows: TraceRows = { spans: [], events: [], artifacts: [] };
  for (const r of records) {
    if (r.record === 'span') rows.spans.push(spanRow(r, ingestedAt));
    else if (r.record === 'event') rows.events.push(rowOf(r, ingestedAt));
    else rows.artifacts.push(rowOf(r, ingestedAt));
  }
  return rows;
};

/**
 * Artifacts and events before spans: a span that is visible has its refs written. Resolves once
 * every insert is durable; a rejection leaves some tables written, which a retry repeats harmlessly.
 */
export const writeTraceRows = async (analytics: AnalyticsStore, rows: TraceRows): Promise<void> => {
  if (rows.artifacts.length > 0) await analytics.insert(TRACE_TABLES.artifacts, rows.artifacts);
  if (rows.events.length > 0) await analytics.insert(TRACE_TABLES.events, rows.events);
  if (rows.spans.length > 0) await analytics.insert(TRACE_TABLES.spans, rows.spans);
};
