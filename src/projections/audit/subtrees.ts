import { hashRange, nodeHash, perfectRoot, type Range } from '../../audit/merkle.js';
import type { Pool, PoolClient } from '../../events/postgres/pool.js';

/**
 * Perfect subtrees of 2^8 leaves and more are stored (audit_nodes) in every log; smaller ones are
 * hashed from a tile of 2^8 leaves.
 */
export const STORED_LEVEL = 8;
export const TILE = 1 << STORED_LEVEL;
/**
 * Batches sealed since proofs were made in one statement also store the subtrees of 2^4 to 2^7
 * leaves, so a proof reads 16 leaves and hashes 15 nodes instead of 256 and 255 (bench:audit). A
 * log sealed before lacks them: a proof that finds one missing reads the tile (computeWith).
 */
export const SMALL_LEVEL = 4;
export const RUN = 1 << SMALL_LEVEL;

const levelOf = (lo: number, hi: number): number => Math.log2(hi - lo);
const isPerfect = (lo: number, hi: number): boolean => {
  const size = hi - lo;
  return size > 0 && (size & (size - 1)) === 0 && lo % size === 0;
};
const nodeKey = (level: number, idx: number) => `${level}:${idx}`;

export class MissingSubtreeError extends Error {
  constructor(
    readonly lo: number,
    readonly hi: number,
  ) {
    super(`subtree [${lo}, ${hi}) is not loaded`);
    this.name = 'MissingSubtreeError';
  }
}

/**
 * The hashes of perfect subtrees of one tenant's tree that a computation can see: some leaves, some
 * stored nodes; anything else is hashed from its children and remembered. Nothing here reads the
 * database: a loader fills it, and a missing piece is a MissingSubtreeError naming it.
 */
export class Subtrees {
  private readonly nodes = new Map<string, Buffer>();
  private readonly leaves = new Map<number, Buffer>();
  /** Runs of consecutive leaves as read (TILE_SQL): a tile, or the RUN leaves around one. */
  private readonly runs: { first: number; last: number; leaves: Buffer }[] = [];

  /**
   * @param storedBelow subtrees of TILE leaves and more that end at or before this index are stored
   * and must be loaded, never recomputed (the sealer hashes only what its batch completes).
   */
  constructor(private readonly storedBelow = Number.POSITIVE_INFINITY) {}

  addLeaf(index: number, hash: Buffer): void {
    this.leaves.set(index, hash);
  }

  /** Leaves first..last, their hashes concatenated in order; all within one tile. */
  addRun(first: number, last: number, leaves: Buffer): void {
    this.runs.push({ first, last, leaves });
  }

  addNode(lo: number, hi: number, hash: Buffer): void {
    const level = levelOf(lo, hi);
    if (level === 0) this.leaves.set(lo, hash);
    else this.nodes.set(nodeKey(level, lo >> level), hash);
  }

  /** MTH of the aligned perfect subtree [lo, hi). */
  perfect = (lo: number, hi: number): Buffer => {
    if (!isPerfect(lo, hi)) throw new RangeError(`[${lo}, ${hi}) is not an aligned perfect subtree`);
    const size = hi - lo;
    const key = size === 1 ? null : nodeKey(levelOf(lo, hi), lo / size);
    const known = key === null ? this.leaves.get(lo) : this.nodes.get(key);
    if (known) return known;
    if (size < TILE) {
      const run = this.runs.find((r) => r.first <= lo && hi - 1 <= r.last);
      if (run) return perfectRoot(run.leaves, (lo - run.first) * 32, size);
    }
    if (key === null || (size >= TILE && hi <= this.storedBelow)) throw new MissingSubtreeError(lo, hi);
    const mid = lo + size / 2;
    const hash = nodeHash(this.perfect(lo, mid), this.perfect(mid, hi));
    this.nodes.set(key, hash);
    return hash;
  };

  /** MTH of a range that appears in a proof (perfect, or a right edge). */
  range = (lo: number, hi: number): Buffer => hashRange(lo, hi, this.perfect);
}

/** The aligned perfect subtrees `hashRange` asks for when hashing each of `ranges`. */
export const perfectPiecesOf = (ranges: readonly Range[]): Range[] => {
  const pieces: Range[] = [];
  const zero = Buffer.alloc(32);
  for (const [lo, hi] of ranges)
    hashRange(lo, hi, (a, b) => {
      pieces.push([a, b]);
      return zero;
    });
  return pieces;
};

type Queryable = Pool | PoolClient;

/**
 * The leaves of one tenant's log in [lo, hi) as one row: the first and last index present and
 * their leaf hashes concatenated in order (columns level, idx, hash, last; idx is null when none).
 */
export const TILE_SQL = (lo: string, hi: string) =>
  `SELECT -1::smallint AS level, min(idx) AS idx, string_agg(leaf, ''::bytea ORDER BY idx) AS hash, max(idx) AS last
     FROM audit_events WHERE tenant_id = $1 AND idx >= ${lo} AND idx < ${hi}`;

/**
 * Adds the leaves first..last that TILE_SQL read (a tile, or a run within one); indexes are
 * unique, so the count shows no gap.
 */
const addLeaves = (subtrees: Subtrees, tenantId: string, first: number, last: number, leaves: Buffer) => {
  if (leaves.length !== (last - first + 1) * 32 || Math.floor(first / TILE) !== Math.floor(last / TILE))
    throw new Error(`audit log of ${tenantId} is missing leaves in [${first}, ${last}]`);
  subtrees.addRun(first, last, leaves);
};

/**
 * Loads, for one tenant, what hashing `ranges` needs from storage: stored nodes for the pieces of
 * 256 leaves and more, leaf hashes for the smaller ones. Every range must lie within the sealed
 * tree (whose nodes are all stored).
 */
export const loadSubtrees = async (
  db: Queryable,
  tenantId: string,
  ranges: readonly Range[],
): Promise<Subtrees> => {
  const subtrees = new Subtrees();
  const levels: number[] = [];
  const indexes: number[] = [];
  const leafIdx = new Set<number>();
  for (const [lo, hi] of perfectPiecesOf(ranges)) {
    if (hi - lo >= TILE) {
      levels.push(levelOf(lo, hi));
      indexes.push(lo / (hi - lo));
    } else for (let i = lo; i < hi; i++) leafIdx.add(i);
  }
  // Small pieces lie in at most a few tiles: each tile is read as one index range, a plan that does
  // not depend on the table's statistics (`idx = ANY` scanned the whole log before ANALYZE), and
  // comes back as one row of concatenated leaves (256 rows made 256 buffers to collect, and a slow
  // tail). Stored nodes and tiles come from one statement: one round trip.
  const tiles = [...new Set([...leafIdx].map((i) => Math.floor(i / TILE)))];
  if (levels.length === 0 && tiles.length === 0) return subtrees;
  const params: unknown[] = [tenantId, levels, indexes];
  const parts = [
    `SELECT n.level, n.idx, n.hash, NULL::bigint AS last FROM audit_nodes n
       JOIN unnest($2::smallint[], $3::bigint[]) AS w(level, idx) ON n.level = w.level AND n.idx = w.idx
      WHERE n.tenant_id = $1`,
  ];
  for (const t of tiles) {
    params.push(t * TILE, (t + 1) * TILE);
    parts.push(`(${TILE_SQL(`$${params.length - 1}`, `$${params.length}`)})`);
  }
  const { rows } = await db.query<SubtreeRow>(parts.join(' UNION ALL '), params);
  addRows(subtrees, tenantId, rows);
  return subtrees;
};

/** A row of loadSubtrees' statement: a stored node (last null), or a run of leaves (TILE_SQL). */
export interface SubtreeRow {
  level: number;
  idx: string | null;
  hash: Buffer;
  last: string | null;
}

/** Adds stored nodes and runs of leaves, as TILE_SQL and the node statements return them. */
export const addRows = (subtrees: Subtrees, tenantId: string, rows: readonly SubtreeRow[]): void => {
  for (const r of rows) {
    if (r.idx === null) continue;
    if (r.last !== null) addLeaves(subtrees, tenantId, Number(r.idx), Number(r.last), r.hash);
    else {
      const lo = Number(r.idx) * 2 ** r.level;
      subtrees.addNode(lo, lo + 2 ** r.level, r.hash);
    }
  }
};

/**
 * Runs `compute` over `subtrees`, loading from storage each piece it finds missing (a stored node,
 * or the whole tile of leaves around a missing leaf) and running it again. A piece that storage
 * does not hold either is an error: the tree is damaged.
 */
export const computeWith = async <T>(
  db: Queryable,
  tenantId: string,
  subtrees: Subtrees,
  compute: () => T,
): Promise<T> => {
  for (let attempt = 0; ; attempt++) {
    try {
      return compute();
    } catch (err) {
      if (!(err instanceof MissingSubtreeError) || attempt >= 64) throw err;
      const size = err.hi - err.lo;
      if (size === 1) {
        const from = Math.floor(err.lo / TILE) * TILE;
        const { rows } = await db.query<{ idx: string | null; hash: Buffer; last: string | null }>(
          TILE_SQL('$2', '$3'),
          [tenantId, from, from + TILE],
        );
        const tile = rows[0];
        if (!tile || tile.idx === null || !(Number(tile.idx) <= err.lo && err.lo <= Number(tile.last)))
          throw new Error(`audit log of ${tenantId} has no leaf ${err.lo}`);
        addLeaves(subtrees, tenantId, Number(tile.idx), Number(tile.last), tile.hash);
      } else {
        const { rows } = await db.query<{ hash: Buffer }>(
          'SELECT hash FROM audit_nodes WHERE tenant_id = $1 AND level = $2 AND idx = $3',
          [tenantId, levelOf(err.lo, err.hi), err.lo / size],
        );
        if (!rows[0])
          throw new Error(`audit log of ${tenantId} has no stored subtree [${err.lo}, ${err.hi})`);
        subtrees.addNode(err.lo, err.hi, rows[0].hash);
      }
    }
  }
};
