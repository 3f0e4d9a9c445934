import { consistencyRanges, inclusionRanges, type Range } from '../../audit/merkle.js';
import { archiveKey, type BatchHead, manifestKey } from '../../audit/model.js';
import { namedStatement, type Pool } from '../../events/postgres/pool.js';
import { ServiceError } from '../../lib/errors.js';
import { ObjectNotFoundError, type ObjectStore } from '../../objects/port.js';
import {
  addRows,
  computeWith,
  loadSubtrees,
  RUN,
  SMALL_LEVEL,
  type SubtreeRow,
  Subtrees,
  TILE,
  TILE_SQL,
} from './subtrees.js';

/**
 * The audit log's read side (SPEC 4.8 AuditService: ListEvents, GetEvent, GetInclusionProof, and a
 * consistency proof; SPEC 5 audit read facade). Every method takes the tenant the caller is bound
 * to and reads only that tenant's rows: an id of another tenant is simply not found.
 */

export interface AuditEventView {
  index: number;
  event_id: string;
  received_at: string;
  leaf: string;
  /** The batch that sealed it; null until sealed. */
  batch_no: number | null;
  /** The canonical bytes, parsed (they are JSON); the exact bytes are in `bytes`. */
  event: unknown;
  /** base64 of the canonical bytes as received. */
  bytes: string;
}

export interface BatchView {
  batch_no: number;
  first_index: number;
  tree_size: number;
  root: string;
  head: BatchHead;
  signature: string;
  key_id: string;
  manifest_sha256: string;
  archive_sha256: string;
  archive_bytes: number;
  archive_key: string;
  manifest_key: string;
  sealed_at: string;
}

export interface InclusionProofView {
  event_id: string;
  index: number;
  leaf: string;
  batch_no: number;
  tree_size: number;
  root: string;
  proof: string[];
}

export interface ConsistencyProofView {
  from: { batch_no: number; tree_size: number; root: string };
  to: { batch_no: number; tree_size: number; root: string };
  proof: string[];
}

const noBatchOfSize = (treeSize: number) =>
  new ServiceError('not_found', `no audit batch ends at tree size ${treeSize}; proofs are to signed heads`);

interface EventRow {
  idx: string;
  event_id: string;
  received_at: Date;
  leaf: Buffer;
  bytes: Buffer;
  batch_no: string | null;
}

interface BatchRow {
  batch_no: string;
  first_index: string;
  tree_size: string;
  root: Buffer;
  head: string;
  signature: string;
  key_id: string;
  manifest_sha256: Buffer;
  archive_sha256: Buffer;
  archive_bytes: string;
  sealed_at: Date;
}

const eventView = (r: EventRow): AuditEventView => {
  let event: unknown = null;
  try {
    event = JSON.parse(r.bytes.toString('utf8'));
  } catch {
    // Stored only after it parsed (consumer.ts); a row that no longer does is shown as bytes only.
  }
  return {
    index: Number(r.idx),
    event_id: r.event_id,
    received_at: r.received_at.toISOString(),
    leaf: r.leaf.toString('hex'),
    batch_no: r.batch_no === null ? null : Number(r.batch_no),
    event,
    bytes: r.bytes.toString('base64'),
  };
};

const batchView = (r: BatchRow): BatchView => ({
  batch_no: Number(r.batch_no),
  first_index: Number(r.first_index),
  tree_size: Number(r.tree_size),
  root: r.root.toString('hex'),
  head: JSON.parse(r.head) as BatchHead,
  signature: r.signature,
  key_id: r.key_id,
  manifest_sha256: r.manifest_sha256.toString('hex'),
  archive_sha256: r.archive_sha256.toString('hex'),
  archive_bytes: Number(r.archive_bytes),
  archive_key: archiveKey(Number(r.batch_no)),
  manifest_key: manifestKey(Number(r.batch_no)),
  sealed_at: r.sealed_at.toISOString(),
});

/** An id as quoted back in a message: never the whole of a 100,000-character one. */
const quoted = (id: string) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}...` : id);

const EVENT_COLUMNS = `e.idx, e.event_id, e.received_at, e.leaf, e.bytes,
  (SELECT b.batch_no FROM audit_batches b WHERE b.tenant_id = e.tenant_id AND b.tree_size > e.idx
    ORDER BY b.tree_size LIMIT 1) AS batch_no`;
const BATCH_COLUMNS = `batch_no, first_index, tree_size, root, head, signature, key_id, manifest_sha256,
  archive_sha256, archive_bytes, sealed_at`;

/**
 * An inclusion proof in one round trip: the event, the batch that sealed it and the head asked
 * for (that batch, or the one ending at $3), and what the proof is hashed from. From level 4 up, a
 * proof of leaf i in a tree of size n takes, at each level l, the sibling of i's subtree (index
 * (i >> l) xor 1) or pieces of the right edge, which are the subtrees (n >> l) - 1 at the levels
 * where n has a bit set; both are asked for at each level, and one that is not stored, or not
 * needed, costs an index probe. Below level 4 the pieces lie in the runs of 16 leaves around i and
 * around n - 1; where the log stores no nodes below level 8 (a tile starting before
 * small_nodes_from, migration 0024), in their tiles of 256. Rows: one 'head' (idx, last = the
 * sealing batch's size, hash = the leaf, batch_no and root of the head asked for; batch_no null
 * when no head has that size), then 'node' and 'run' rows as loadSubtrees reads them, only when
 * the event is in that head.
 */
const INCLUSION_SQL = `
  WITH e AS (
    SELECT e.idx, e.leaf,
           (SELECT b.tree_size FROM audit_batches b WHERE b.tenant_id = e.tenant_id AND b.tree_size > e.idx
             ORDER BY b.tree_size LIMIT 1) AS sealing
      FROM audit_events e WHERE e.tenant_id = $1 AND e.event_id = $2
  ), h AS (
    SELECT e.idx, e.leaf, e.sealing, b.tree_size AS size, b.batch_no, b.root
      FROM e LEFT JOIN LATERAL (SELECT b.tree_size, b.batch_no, b.root FROM audit_batches b
                                 WHERE b.tenant_id = $1 AND b.tree_size = COALESCE($3::bigint, e.sealing)
                                 LIMIT 1) AS b ON true
  ), p AS (
    SELECT h.idx, h.size, COALESCE(l.small_nodes_from, ${Number.MAX_SAFE_INTEGER}) AS small
      FROM h JOIN audit_logs l ON l.tenant_id = $1 WHERE h.size > h.idx
  )
  SELECT 'head' AS kind, NULL::smallint AS level, idx, sealing AS last, leaf AS hash, batch_no, root FROM h
  UNION ALL
  SELECT 'node', l.level::smallint, n.idx, NULL::bigint, n.hash, NULL::bigint, NULL::bytea
    FROM p CROSS JOIN generate_series(${SMALL_LEVEL}, 62) AS l(level)
    CROSS JOIN LATERAL (VALUES ((p.idx >> l.level) # 1::bigint), ((p.size >> l.level) - 1)) AS w(idx)
    CROSS JOIN LATERAL (SELECT n.idx, n.hash FROM audit_nodes n
                         WHERE n.tenant_id = $1 AND n.level = l.level AND n.idx = w.idx LIMIT 1) AS n
   WHERE (p.size >> l.level) > 0
  UNION ALL
  SELECT 'run', t.level, t.idx, t.last, t.hash, NULL::bigint, NULL::bytea
    FROM (SELECT DISTINCT x.at / w.len * w.len AS lo, w.len
            FROM p CROSS JOIN LATERAL (VALUES (p.idx, true), (p.size - 1, false)) AS x(at, always)
            CROSS JOIN LATERAL (SELECT CASE WHEN x.at / ${TILE} * ${TILE} >= p.small THEN ${RUN} ELSE ${TILE} END AS len) AS w
           WHERE x.always OR p.size % w.len <> 0) AS r
    CROSS JOIN LATERAL (${TILE_SQL('r.lo', 'r.lo + r.len')}) t`;

/*
 * Named, against pool.ts's rule for tables that grow: planning the statement took 2.3 ms of its 3.8
 * (EXPLAIN ANALYZE, 1M events), more than executing it. Every other table is reached from one row
 * by a parameterized lookup on its key (a correlated LIMIT, which is never turned into a join of the
 * tenant's whole table), and PostgreSQL plans a prepared statement again whenever the statistics of
 * a table in it change (PREPARE), so a plan made while the audit tables were small lasts until
 * autovacuum's next analyze of them: at worst, proofs asked for in a log's first minutes of fast
 * growth scan what was small when it was planned.
 */
const inclusionStatement = namedStatement('svc_audit_inclusion', INCLUSION_SQL);

interface ProofRow extends SubtreeRow {
  kind: 'head' | 'node' | 'run';
  batch_no: string | null;
  root: Buffer | null;
}

export const MAX_PAGE = 1_000;

export class AuditReads {
  constructor(
    private readonly pool: Pool,
    private readonly objects: ObjectStore | null,
  ) {}

  async status(tenantId: string) {
    const { rows } = await this.pool.query<{ size: string; sealed_size: string; batches: string }>(
      'SELECT size, sealed_size, batches FROM audit_logs WHERE tenant_id = $1',
      [tenantId],
    );
    const r = rows[0];
    return {
      tenant_id: tenantId,
      events: Number(r?.size ?? 0),
      sealed_events: Number(r?.sealed_size ?? 0),
      batches: Number(r?.batches ?? 0),
    };
  }

  /** Events in arrival order, from leaf index `after + 1`. */
  async events(tenantId: string, page: { after?: number; limit?: number } = {}) {
    const limit = Math.min(Math.max(page.limit ?? 100, 1), MAX_PAGE);
    const after = page.after ?? -1;
    const { rows } = await this.pool.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM audit_events e WHERE e.tenant_id = $1 AND e.idx > $2 ORDER BY e.idx LIMIT $3`,
      [tenantId, after, limit],
    );
    const data = rows.map(eventView);
    return { data, next_after: data.length === limit ? data[data.length - 1]!.index : null };
  }

  async event(tenantId: string, eventId: string): Promise<AuditEventView> {
    const { rows } = await this.pool.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM audit_events e WHERE e.tenant_id = $1 AND e.event_id = $2`,
      [tenantId, eventId],
    );
    if (!rows[0]) throw new ServiceError('not_found', `no audit event ${quoted(eventId)}`);
    return eventView(rows[0]);
  }

  async batches(tenantId: string, page: { after?: number; limit?: number } = {}) {
    const limit = Math.min(Math.max(page.limit ?? 100, 1), MAX_PAGE);
    const { rows } = await this.pool.query<BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM audit_batches WHERE tenant_id = $1 AND batch_no > $2 ORDER BY batch_no LIMIT $3`,
      [tenantId, page.after ?? 0, limit],
    );
    const data = rows.map(batchView);
    return { data, next_after: data.length === limit ? data[data.length - 1]!.batch_no : null };
  }

  async batch(tenantId: string, batchNo: number): Promise<BatchView> {
    const { rows } = await this.pool.query<BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM audit_batches WHERE tenant_id = $1 AND batch_no = $2`,
      [tenantId, batchNo],
    );
    if (!rows[0]) throw new ServiceError('not_found', `no audit batch ${batchNo}`);
    return batchView(rows[0]);
  }

  private async batchOfSize(tenantId: string, treeSize: number) {
    const { rows } = await this.pool.query<{ batch_no: string; root: Buffer }>(
      'SELECT batch_no, root FROM audit_batches WHERE tenant_id = $1 AND tree_size = $2',
      [tenantId, treeSize],
    );
    if (!rows[0]) throw noBatchOfSize(treeSize);
    return { batch_no: Number(rows[0].batch_no), tree_size: treeSize, root: rows[0].root.toString('hex') };
  }

  /**
   * The proof that the event is in the tree of a signed head: the batch that sealed it, or a later
   * batch named by its tree size.
   */
  async inclusionProof(tenantId: string, eventId: string, treeSize?: number): Promise<InclusionProofView> {
    const { rows } = await this.pool.query<ProofRow>(
      inclusionStatement([tenantId, eventId, treeSize ?? null]),
    );
    const row = rows.find((r) => r.kind === 'head');
    if (!row) throw new ServiceError('not_found', `no audit event ${quoted(eventId)}`);
    if (row.last === null)
      throw new ServiceError(
        'conflict',
        `audit event ${quoted(eventId)} is not sealed yet; ask again after its batch is sealed`,
      );
    const index = Number(row.idx);
    const size = treeSize ?? Number(row.last);
    if (size <= index)
      throw new ServiceError(
        'bad_request',
        `tree size ${size} does not include event ${quoted(eventId)} (index ${index})`,
      );
    if (row.batch_no === null || row.root === null) throw noBatchOfSize(size);
    const head = { batch_no: Number(row.batch_no), tree_size: size, root: row.root.toString('hex') };
    const subtrees = new Subtrees();
    addRows(
      subtrees,
      tenantId,
      rows.filter((r) => r.kind !== 'head'),
    );
    // The statement read every piece a sound log holds for this proof; anything else is loaded here.
    const proof = await this.hexProof(tenantId, subtrees, inclusionRanges(index, size));
    return { event_id: eventId, index, leaf: row.hash.toString('hex'), ...head, proof };
  }

  /** RFC 9162 consistency proof between two signed heads, named by their tree sizes. */
  async consistencyProof(tenantId: string, fromSize: number, toSize: number): Promise<ConsistencyProofView> {
    if (
      !(Number.isSafeInteger(fromSize) && Number.isSafeInteger(toSize) && fromSize >= 1 && fromSize <= toSize)
    )
      throw new ServiceError('bad_request', 'from and to must be tree sizes of signed heads with from <= to');
    const [from, to] = await Promise.all([
      this.batchOfSize(tenantId, fromSize),
      this.batchOfSize(tenantId, toSize),
    ]);
    const ranges = consistencyRanges(fromSize, toSize);
    const proof = await this.hexProof(tenantId, await loadSubtrees(this.pool, tenantId, ranges), ranges);
    return { from, to, proof };
  }

  /** The hashes of `ranges`, hex, loading from storage whatever `subtrees` lacks. */
  private hexProof(tenantId: string, subtrees: Subtrees, ranges: readonly Range[]): Promise<string[]> {
    return computeWith(this.pool, tenantId, subtrees, () =>
      ranges.map(([lo, hi]) => subtrees.range(lo, hi).toString('hex')),
    );
  }

  private async object(tenantId: string, key: string, what: string): Promise<Buffer> {
    if (!this.objects) throw new ServiceError('service_unavailable', 'no object store in this process');
    try {
      return await this.objects.get(tenantId, key);
    } catch (err) {
      if (err instanceof ObjectNotFoundError)
        throw new ServiceError('not_found', `${what} is missing from the object store`);
      throw err;
    }
  }

  async archive(tenantId: string, batchNo: number): Promise<Buffer> {
    await this.batch(tenantId, batchNo);
    return this.object(tenantId, archiveKey(batchNo), `the archive of batch ${batchNo}`);
  }

  async manifest(tenantId: string, batchNo: number): Promise<Buffer> {
    await this.batch(tenantId, batchNo);
    return this.object(tenantId, manifestKey(batchNo), `the manifest of batch ${batchNo}`);
  }
}
