import { AnalyticsError, type AnalyticsRow, type AnalyticsStore } from '../../analytics/port.js';
import type { Bus } from '../../events/bus.js';
import { bodyBytes } from '../../events/envelopes/body.js';
import {
  type BodyRef,
  isChunkedBody,
  type RequestCompleted,
} from '../../events/envelopes/request-completed.js';
import type { BodySide } from '../../events/subjects.js';
import type { ObjectStore } from '../../objects/port.js';
import { gatewaySpanRecords } from '../traces/gateway-span.js';
import { traceRows, writeTraceRows } from '../traces/write.js';
import { auditMessages, emitRequestsLogged } from './audit.js';
import { type DlqReason, INGEST_TABLES, type IngestMetrics, type IngestTable } from './metrics.js';
import { buildPack, type Frame, packKey, writePack } from './pack.js';
import { type DurabilitySampler, readBack } from './readback.js';
import { type RetryPolicy, settleAll, withRetries } from './retry.js';
import { costLineRows, requestRow, type StoredBodies, usageLineRows, type WriteStamp } from './rows.js';

/**
 * One flush: bodies packed, rows inserted, rows read back, audit events emitted,
 * the settle hook run, in that order, each step only for the requests that passed the one before.
 * Returns what happened to every request; acking and dead-lettering are the consumer's.
 */

/** Called once a request's rows, bodies and audit event are durable, before its message is acked. */
export type RequestLoggedHook = (envelope: RequestCompleted) => Promise<void> | void;

export interface FlushDeps {
  analytics: AnalyticsStore;
  objects: ObjectStore;
  bus: Bus;
  metrics: IngestMetrics;
  sampler: DurabilitySampler;
  retry: RetryPolicy;
  /** Audit publishes and hook calls in flight at once. */
  concurrency: number;
  onRequestLogged?: RequestLoggedHook;
  onError: (err: unknown, context: string) => void;
}

export interface FlushItem {
  envelope: RequestCompleted;
  /** Chunk payloads in chunk order, per chunked side. */
  chunks: Partial<Record<BodySide, Uint8Array[]>>;
  /** Sides already packed by an earlier, committed delivery. */
  reused: StoredBodies;
}

export type FlushOutcome =
  | { committed: true }
  /** `now`: dead-letter at once, whatever the delivery count (retrying cannot help). */
  | { committed: false; reason: DlqReason; now: boolean; detail: string };

export interface FlushTimings {
  packMs: number;
  insertMs: number;
  readBackMs: number;
  auditMs: number;
}

const SIDES: readonly BodySide[] = ['req', 'res'];
const refOf = (e: RequestCompleted, side: BodySide): BodyRef | undefined =>
  side === 'req' ? e.bodies?.request : e.bodies?.response;

const errorKind = (err: unknown) => (err instanceof AnalyticsError ? err.kind : 'unknown');

/** Anything but the store's own refusal of the rows may succeed on another try. */
const isRetryable = (err: unknown) => !(err instanceof AnalyticsError) || err.retryable;

const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The frames to pack for one request, or why its bodies can never be stored. */
const framesOf = (item: FlushItem): Frame[] | string => {
  const frames: Frame[] = [];
  for (const side of SIDES) {
    const ref = refOf(item.envelope, side);
    if (!ref) continue;
    const reused = item.reused[side];
    if (reused && reused.blake3 === ref.blake3 && reused.byteCount === ref.byte_count) continue;
    const body = bodyBytes(ref, isChunkedBody(ref) ? (item.chunks[side] ?? []) : []);
    if (!body.ok) return `${side} body: ${body.error}`;
    frames.push({ requestId: item.envelope.request_id, side, bytes: body.bytes, blake3: ref.blake3 });
  }
  return frames;
};

export const flushBatch = async (
  deps: FlushDeps,
  items: readonly FlushItem[],
  stamp: WriteStamp,
  timings?: FlushTimings,
): Promise<Map<string, FlushOutcome>> => {
  const outcomes = new Map<string, FlushOutcome>();
  const fail = (ids: Iterable<string>, reason: DlqReason, detail: string, now = false) => {
    for (const id of ids) outcomes.set(id, { committed: false, reason, now, detail });
  };
  const live = () => items.filter((i) => !outcomes.has(i.envelope.request_id));
  const { metrics } = deps;
  let t = performance.now();
  const lap = (key: keyof FlushTimings) => {
    const now = performance.now();
    if (timings) timings[key] += now - t;
    t = now;
  };

  // Bodies: reassembled and verified, then packed per organization.
  const stored = new Map<string, StoredBodies>();
  const framesByOrg = new Map<string, Frame[]>();
  for (const item of items) {
    const e = item.envelope;
    const frames = framesOf(item);
    if (typeof frames === 'string') {
      fail([e.request_id], 'malformed_row', frames, true);
      continue;
    }
    stored.set(e.request_id, { ...item.reused });
    if (frames.length === 0) continue;
    const org = framesByOrg.get(e.org_id) ?? [];
    org.push(...frames);
    framesByOrg.set(e.org_id, org);
  }
  // One pack per organization; their writes (each ending in fsyncs) overlap.
  await settleAll([...framesByOrg], deps.concurrency, async ([orgId, frames]) => {
    const pack = buildPack(packKey(stamp.batchId, stamp.ingestedAt), frames);
    try {
      await withRetries(
        deps.retry,
        () => writePack(deps.objects, orgId, pack),
        (err, again) => deps.onError(err, `body pack ${pack.key} of ${orgId}${again ? '; retrying' : ''}`),
      );
    } catch (err) {
      fail(new Set(frames.map((f) => f.requestId)), 'body_pack_exhausted', describe(err));
      return;
    }
    metrics.bodyPacks.inc();
    metrics.bodyPackFrames.observe(frames.length);
    metrics.bodyPackBytes.observe(pack.data.byteLength);
    frames.forEach((f, i) => {
      const bodies = stored.get(f.requestId)!;
      bodies[f.side] = pack.stored[i]!;
    });
  });
  lap('packMs');

  // Rows: lines first, requests last, so a visible request row implies its lines were written.
  // Rows the store refuses as they are (not a store that is down) are set apart, so one record
  // cannot keep the rest of its flush out of analytics (SPEC 6).
  const rowsOf = (group: readonly FlushItem[]): [IngestTable, AnalyticsRow[]][] => [
    [INGEST_TABLES.usageLines, group.flatMap((i) => usageLineRows(i.envelope, stamp))],
    [INGEST_TABLES.costLines, group.flatMap((i) => costLineRows(i.envelope, stamp))],
    [
      INGEST_TABLES.requests,
      group.map((i) => requestRow(i.envelope, stored.get(i.envelope.request_id) ?? {}, stamp)),
    ],
  ];
  const insertGroup = async (group: readonly FlushItem[]): Promise<void> => {
    for (const [table, rows] of rowsOf(group)) {
      if (rows.length === 0) continue;
      await withRetries(
        deps.retry,
        async () => {
          const end = metrics.batchInsertDuration.startTimer({ table });
          try {
            await deps.analytics.insert(table, rows);
            end({ result: 'ok' });
          } catch (err) {
            end({ result: 'error' });
            throw err;
          }
        },
        (err, again) => {
          metrics.clickhouseErrors.inc({ kind: errorKind(err) });
          if (again) metrics.insertRetries.inc();
          deps.onError(err, `insert into ${table}${again ? '; retrying' : ''}`);
        },
        isRetryable,
      );
    }
  };
  // A record is the store's refusal only when it fails alone while others of the flush are stored;
  // when nothing is stored it is the store (a missing table, say) and every record waits.
  const refused: string[] = [];
  let accepted = 0;
  const insertSettingApart = async (group: readonly FlushItem[]): Promise<void> => {
    try {
      await insertGroup(group);
      accepted += group.length;
    } catch (err) {
      const ids = group.map((i) => i.envelope.request_id);
      if (isRetryable(err)) return fail(ids, 'insert_exhausted', describe(err));
      if (group.length === 1) {
        refused.push(ids[0]!);
        lastRefusal = describe(err);
        return;
      }
      // Halves until the refused records stand alone: a few inserts more, on a rare path.
      const half = Math.ceil(group.length / 2);
      await insertSettingApart(group.slice(0, half));
      await insertSettingApart(group.slice(half));
    }
  };
  let lastRefusal = '';
  if (live().length === 0) return outcomes;
  await insertSettingApart(live());
  if (accepted > 0) fail(refused, 'malformed_row', `refused by the analytics store: ${lastRefusal}`, true);
  else fail(refused, 'insert_exhausted', lastRefusal);
  lap('insertMs');
  const inserting = live();
  if (inserting.length === 0) return outcomes;

  // Read-back: one decision per flush, covering the request rows and both line tables.
  const counts = new Map<IngestTable, number>([
    [INGEST_TABLES.usageLines, inserting.reduce((n, i) => n + i.envelope.usage_lines.length, 0)],
    [INGEST_TABLES.costLines, inserting.reduce((n, i) => n + i.envelope.cost_lines.length, 0)],
    [INGEST_TABLES.requests, inserting.length],
  ]);
  if (deps.sampler.next()) {
    const expected = inserting.map((i) => ({
      requestId: i.envelope.request_id,
      usageLines: i.envelope.usage_lines.length,
      costLines: i.envelope.cost_lines.length,
    }));
    try {
      const missing = await withRetries(
        deps.retry,
        () => readBack(deps.analytics, stamp.batchId, expected),
        (err, again) => {
          metrics.clickhouseErrors.inc({ kind: errorKind(err) });
          deps.onError(err, `durability read-back of ${stamp.batchId}${again ? '; retrying' : ''}`);
        },
      );
      const byId = new Map(inserting.map((i) => [i.envelope.request_id, i.envelope]));
      for (const [table, ids] of Object.entries(missing) as [IngestTable, string[]][]) {
        if (ids.length === 0) continue;
        const lost = ids.reduce((n, id) => {
          const e = byId.get(id)!;
          if (table === INGEST_TABLES.usageLines) return n + e.usage_lines.length;
          if (table === INGEST_TABLES.costLines) return n + e.cost_lines.length;
          return n + 1;
        }, 0);
        metrics.suppressedWrites.inc({ table }, lost);
        counts.set(table, (counts.get(table) ?? 0) - lost);
        fail(ids, 'insert_exhausted', `${table} rows missing on read-back (suppressed write)`);
      }
    } catch (err) {
      metrics.durabilityReadFailures.inc();
      fail(
        inserting.map((i) => i.envelope.request_id),
        'insert_exhausted',
        `durability read-back failed: ${describe(err)}`,
      );
    }
  } else {
    metrics.durabilityReadsSkipped.inc();
  }
  for (const [table, n] of counts) metrics.durableWrites.inc({ table }, n);
  lap('readBackMs');

  // Audit events, then the settle hook: both only for rows known durable. One batch publish for
  // the flush. A message that cannot be built or that the bus refuses fails its own request only;
  // a bus that stays unavailable fails every request in the batch (their rows stay committed).
  const auditing = live();
  if (auditing.length > 0) {
    const { messages, invalid } = auditMessages(auditing.map((i) => i.envelope));
    for (const [id, detail] of invalid) fail([id], 'audit_emit', detail, true);
    try {
      const refused = await withRetries(
        deps.retry,
        () =>
          emitRequestsLogged(deps.bus, messages, (err) =>
            deps.onError(err, `audit events of ${stamp.batchId}; publishing one by one`),
          ),
        (err, again) => deps.onError(err, `audit events of ${stamp.batchId}${again ? '; retrying' : ''}`),
      );
      for (const [id, detail] of refused) fail([id], 'audit_emit', detail);
    } catch (err) {
      fail(
        messages.map((m) => m.requestId),
        'audit_emit',
        describe(err),
      );
    }
  }
  lap('auditMs');
  const hook = deps.onRequestLogged;
  if (hook) {
    const settling = live();
    // Every call at once: the wallet settles the calls of one turn together (one transaction).
    const settled = await settleAll(settling, settling.length, async (i) => hook(i.envelope));
    settled.forEach((r, n) => {
      if (r.status === 'rejected') {
        const id = settling[n]!.envelope.request_id;
        deps.onError(r.reason, `onRequestLogged of ${id}`);
        fail([id], 'process_error', `settle hook: ${describe(r.reason)}`);
      }
    });
  }
  // The gateway's LLM spans of requests that belong to a trace (SPEC 4.3, 6), last: their request
  // rows, audit events and settlements are done whatever happens here, so a trace table that cannot
  // be written holds back no audit record and no settlement. A failure leaves the request for
  // redelivery, which writes the span again (the steps before are idempotent by request id).
  const traced = live().filter((i) => i.envelope.trace.trace_id !== undefined);
  if (traced.length > 0) {
    try {
      const rows = traceRows(
        traced.flatMap((i) => gatewaySpanRecords(i.envelope)),
        stamp.ingestedAt,
      );
      await withRetries(
        deps.retry,
        () => writeTraceRows(deps.analytics, rows),
        (err, again) => {
          metrics.clickhouseErrors.inc({ kind: errorKind(err) });
          deps.onError(err, `gateway trace spans of ${stamp.batchId}${again ? '; retrying' : ''}`);
        },
        isRetryable,
      );
    } catch (err) {
      fail(
        traced.map((i) => i.envelope.request_id),
        'insert_exhausted',
        `gateway trace spans (rows, audit event and settlement done): ${describe(err)}`,
      );
    }
  }
  for (const item of live()) {
    const e = item.envelope;
    if (e.status === 'success' && e.billing.status === 'priced' && e.cost_lines.length === 0)
      metrics.pricedWithoutCostLines.inc();
    outcomes.set(e.request_id, { committed: true });
  }
  return outcomes;
};
