import type { AnalyticsStore } from '../../analytics/port.js';
import type { BodySide } from '../../events/subjects.js';
import { INGEST_TABLES, type IngestTable } from './metrics.js';
import type { StoredBodies, StoredBody } from './rows.js';

/**
 * Durability read-back (SPEC 8): after a flush's inserts resolved, look for exactly the rows that
 * flush wrote (by batch id) and report the ones missing. A missing row is a write the engine
 * acknowledged and did not keep (a suppressed write); its message is left unacked.
 */

/** SPEC 8: 0 is treated as 1, and anything but a whole number falls back to the default of 1. */
export const durabilityStride = (value: unknown): number => {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 0) return 1;
  return n === 0 ? 1 : n;
};

/** One decision per flush: every `stride`-th flush is read back, starting with the first. */
export class DurabilitySampler {
  private flushes = 0;
  readonly stride: number;

  constructor(stride: unknown) {
    this.stride = durabilityStride(stride);
  }

  next(): boolean {
    return this.flushes++ % this.stride === 0;
  }
}

export interface ExpectedWrite {
  requestId: string;
  usageLines: number;
  costLines: number;
}

/** Request ids whose rows are missing, per table. */
export type MissingRows = Record<IngestTable, string[]>;

/**
 * One round trip for the three tables, by batch id alone: a batch id is new for every flush, so
 * only this flush's inserts can have written it, and the bloom-filter index on batch_id finds its
 * parts. Sending the flush's request ids as well (three arrays of up to 4,000 ids) made the statement
 * hundreds of kilobytes, past the URL limits of HTTP servers, and cost the consumer their encoding.
 * uniqExact(line_index): an insert retried inside one flush writes the same batch id twice, and a
 * line counts once.
 */
const READ_BACK_SQL = `
SELECT 'requests' AS t, request_id, toUInt64(1) AS n FROM ${INGEST_TABLES.requests}
 WHERE batch_id = {batch:String} GROUP BY request_id
UNION ALL
SELECT 'usage' AS t, request_id, uniqExact(line_index) AS n FROM ${INGEST_TABLES.usageLines}
 WHERE batch_id = {batch:String} GROUP BY request_id
UNION ALL
SELECT 'cost' AS t, request_id, uniqExact(line_index) AS n FROM ${INGEST_TABLES.costLines}
 WHERE batch_id = {batch:String} GROUP BY request_id`;

export const readBack = async (
  store: AnalyticsStore,
  batchId: string,
  expected: readonly ExpectedWrite[],
): Promise<MissingRows> => {
  const rows = await store.query<{
    t: 'requests' | 'usage' | 'cost';
    request_id: string;
    n: string | number;
  }>(READ_BACK_SQL, { batch: batchId });
  const found = {
    requests: new Map<string, number>(),
    usage: new Map<string, number>(),
    cost: new Map<string, number>(),
  };
  for (const r of rows) found[r.t].set(r.request_id, Number(r.n));
  return {
    [INGEST_TABLES.requests]: expected
      .filter((e) => !found.requests.has(e.requestId))
      .map((e) => e.requestId),
    [INGEST_TABLES.usageLines]: expected
      .filter((e) => e.usageLines > 0 && found.usage.get(e.requestId) !== e.usageLines)
      .map((e) => e.requestId),
    [INGEST_TABLES.costLines]: expected
      .filter((e) => e.costLines > 0 && found.cost.get(e.requestId) !== e.costLines)
      .map((e) => e.requestId),
  };
};

interface StoredBodyRow {
  request_id: string;
  req_body_pack: string;
  req_body_offset: string | number;
  req_body_length: string | number;
  req_body_byte_count: string | number;
  req_body_blake3: string;
  res_body_pack: string;
  res_body_offset: string | number;
  res_body_length: string | number;
  res_body_byte_count: string | number;
  res_body_blake3: string;
}

const storedSide = (row: StoredBodyRow, side: BodySide): StoredBody | undefined => {
  const pack = row[`${side}_body_pack`];
  if (!pack) return undefined;
  return {
    pack,
    offset: Number(row[`${side}_body_offset`]),
    length: Number(row[`${side}_body_length`]),
    byteCount: Number(row[`${side}_body_byte_count`]),
    blake3: row[`${side}_body_blake3`],
  };
};

/**
 * Bodies already packed for committed requests (the latest row of each). A redelivered envelope
 * whose chunks were acked with an earlier, committed delivery reuses these instead of its chunks.
 */
export const committedBodies = async (
  store: AnalyticsStore,
  requestIds: readonly string[],
): Promise<Map<string, StoredBodies>> => {
  if (requestIds.length === 0) return new Map();
  const rows = await store.query<StoredBodyRow>(
    `SELECT request_id,
            argMax(req_body_pack, ingested_at) AS req_body_pack,
            argMax(req_body_offset, ingested_at) AS req_body_offset,
            argMax(req_body_length, ingested_at) AS req_body_length,
            argMax(req_body_byte_count, ingested_at) AS req_body_byte_count,
            argMax(req_body_blake3, ingested_at) AS req_body_blake3,
            argMax(res_body_pack, ingested_at) AS res_body_pack,
            argMax(res_body_offset, ingested_at) AS res_body_offset,
            argMax(res_body_length, ingested_at) AS res_body_length,
            argMax(res_body_byte_count, ingested_at) AS res_body_byte_count,
            argMax(res_body_blake3, ingested_at) AS res_body_blake3
       FROM ${INGEST_TABLES.requests} WHERE request_id IN {ids:Array(String)} GROUP BY request_id`,
    { ids: [...requestIds] },
  );
  return new Map(
    rows.map((r) => {
      const bodies: StoredBodies = {};
      const req = storedSide(r, 'req');
      const res = storedSide(r, 'res');
      if (req) bodies.req = req;
      if (res) bodies.res = res;
      return [r.request_id, bodies];
    }),
  );
};
