import { hashRange, nodeHash, type Range } from '../../audit/merkle.js';
import type { Pool, PoolClient } from '../../events/postgres/pool.js';

/** Perfect subtrees of 2^8 leaves and more are stored (audit_nodes); smaller ones are hashed from leaves. */
export const STORED_LEVEL = 8;
export const TILE = 1 << STORED_LEVEL;

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

  /**
   * @param storedBelow subtrees of TILE leaves and more that end at or before this index are stored
   * and must be loaded, never recomputed (the sealer hashes only what its batch completes).
   */
  constructor(private readonly storedBelow = Number.POSITIVE_INFINITY) {}

  addLeaf(index: number, hash: Buffer): void {
    this.leaves.set(index, hash);
  }

  addNode(lo: number, hi: number, hash: Buffer): void {
    const level = levelOf(lo, hi);
    if (level === 0) this.leaves.set(lo, hash);
    else this.nodes.set(nodeKey(level, lo >> level), hash);
  }

  /** MTH of the aligned perfect subtree [lo, hi). */
  perfect = (lo: number, hi: number): Buffer => {
    if (!isPerfect(lo, hi)) throw new RangeError(`[${lo}, ${hi}) is not an aligned perfect subtree`);
    if (hi - lo === 1) {
      const leaf = this.leaves.get(lo);
      if (!leaf) throw new MissingSubtreeError(lo, hi);
      return leaf;
    }
    const level = levelOf(lo, hi);
    const key = nodeKey(level, lo / (hi - lo));
    const known = this.nodes.get(key);
    if (known) return known;
    if (hi - lo >= TILE && hi <= this.storedBelow) throw new MissingSubtreeError(lo, hi);
    const mid = lo + (hi - lo) / 2;
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
  // not depend on the table's statistics (`idx = ANY` scanned the whole log before ANALYZE). The
  // stored nodes and the tiles are read at once, on separate connections.
  const tiles = [...new Set([...leafIdx].map((i) => Math.floor(i / TILE)))];
  const [nodes, ...leaves] = await Promise.all([
    levels.length === 0
      ? []
      : db
          .query<{ level: number; idx: string; hash: Buffer }>(
            `SELECT n.level, n.idx, n.hash FROM audit_nodes n
               JOIN unnest($2::smallint[], $3::bigint[]) AS w(level, idx) ON n.level = w.level AND n.idx = w.idx
              WHERE n.tenant_id = $1`,
            [tenantId, levels, indexes],
          )
          .then((r) => r.rows),
    ...tiles.map((t) =>
      db
        .query<{ idx: string; leaf: Buffer }>(
          'SELECT idx, leaf FROM audit_events WHERE tenant_id = $1 AND idx >= $2 AND idx < $3',
          [tenantId, t * TILE, (t + 1) * TILE],
        )
        .then((r) => r.rows),
    ),
  ]);
  for (const r of nodes as { level: number; idx: string; hash: Buffer }[]) {
    const lo = Number(r.idx) * 2 ** r.level;
    subtrees.addNode(lo, lo + 2 ** r.level, r.hash);
  }
  for (const r of (leaves as { idx: string; leaf: Buffer }[][]).flat())
    subtrees.addLeaf(Number(r.idx), r.leaf);
  return subtrees;
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
        const { rows } = await db.query<{ idx: string; leaf: Buffer }>(
          'SELECT idx, leaf FROM audit_events WHERE tenant_id = $1 AND idx >= $2 AND idx < $3',
          [tenantId, from, from + TILE],
        );
        for (const r of rows) subtrees.addLeaf(Number(r.idx), r.leaf);
        if (!rows.some((r) => Number(r.idx) === err.lo))
          throw new Error(`audit log of ${tenantId} has no leaf ${err.lo}`);
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
