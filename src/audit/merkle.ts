import { hash } from 'node:crypto';

/**
 * RFC 9162 section 2.1 Merkle trees over SHA-256. Tree sizes and indexes are plain numbers, so all
 * arithmetic here is done with division rather than 32-bit bitwise operators: sizes up to 2^53
 * stay exact and garbage input cannot wrap around into a valid-looking proof.
 */

/** A half-open range of leaf indexes whose MTH is one proof element or one frontier hash. */
export type Range = readonly [lo: number, hi: number];

const HASH_BYTES = 32;
const LEAF_PREFIX = Buffer.from([0x00]);

/*
 * crypto.hash is the cheapest SHA-256 call Node has, and asking it for a latin1 ('binary') string
 * then copying that into a buffer beats its 'buffer' output by about 30%: a Buffer made in C++
 * costs more than the string. Building a tree is a million of these, so it shows.
 */
const sha256Into = (data: Uint8Array, target: Buffer, offset: number): void => {
  target.write(hash('sha256', data, 'binary'), offset, HASH_BYTES, 'latin1');
};
const sha256 = (data: Uint8Array): Buffer => Buffer.from(hash('sha256', data, 'binary'), 'latin1');

export const EMPTY_ROOT: Buffer = sha256(new Uint8Array(0));

export const leafHash = (entry: Uint8Array): Buffer => sha256(Buffer.concat([LEAF_PREFIX, entry]));

export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => {
  const input = Buffer.allocUnsafe(1 + left.length + right.length);
  input[0] = 0x01;
  input.set(left, 1);
  input.set(right, 1 + left.length);
  return sha256(input);
};

/**
 * MTH of `count` (a power of two) consecutive leaf hashes starting at byte `offset` of `leaves`:
 * each level is hashed into one scratch buffer, with no Buffer made per node (a proof hashes up to
 * 255 of them from a tile of leaves, bench:audit).
 */
export const perfectRoot = (leaves: Buffer, offset: number, count: number): Buffer => {
  if (!(Number.isSafeInteger(count) && count >= 1 && (count & (count - 1)) === 0))
    throw new RangeError(`a perfect subtree has a power-of-two number of leaves, got ${count}`);
  if (offset < 0 || offset + count * HASH_BYTES > leaves.length)
    throw new RangeError(`${count} leaves at byte ${offset} lie outside ${leaves.length} bytes`);
  if (count === 1) return leaves.subarray(offset, offset + HASH_BYTES);
  const input = Buffer.allocUnsafe(1 + 2 * HASH_BYTES);
  input[0] = 0x01;
  const level = Buffer.allocUnsafe((count / 2) * HASH_BYTES);
  let from = leaves;
  let base = offset;
  for (let n = count; n > 1; n /= 2) {
    // Node j reads bytes [64j, 64j + 64) of the level below and is written at 32j: at or before
    // what it read, after it was copied out, so one buffer serves every level.
    for (let j = 0; j < n / 2; j++) {
      from.copy(input, 1, base + 2 * HASH_BYTES * j, base + 2 * HASH_BYTES * (j + 1));
      sha256Into(input, level, HASH_BYTES * j);
    }
    from = level;
    base = 0;
  }
  return level.subarray(0, HASH_BYTES);
};

const isSize = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
const isHash = (h: unknown): h is Uint8Array => h instanceof Uint8Array && h.length === HASH_BYTES;
const isOdd = (n: number) => n % 2 === 1;
const half = (n: number) => Math.floor(n / 2);

/** The largest power of two strictly smaller than n (n >= 2): the split point k of RFC 9162 2.1.1. */
const splitPoint = (n: number): number => {
  if (n <= 2 ** 32) return 2 ** (31 - Math.clz32(n - 1));
  let k = 2 ** 32;
  while (k * 2 < n) k *= 2;
  return k;
};

const isPowerOfTwo = (n: number) => n >= 1 && (n === 1 || splitPoint(n) * 2 === n);

const checkSize = (name: string, n: number) => {
  if (!isSize(n)) throw new RangeError(`${name} must be a non-negative safe integer, got ${n}`);
};

/** PATH(index, D[size]) as ranges, bottom up. */
export const inclusionRanges = (index: number, size: number): Range[] => {
  checkSize('index', index);
  checkSize('size', size);
  if (index >= size) throw new RangeError(`index ${index} is outside a tree of size ${size}`);
  const topDown: Range[] = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      topDown.push([lo + k, hi]);
      hi = lo + k;
    } else {
      topDown.push([lo, lo + k]);
      lo += k;
    }
  }
  return topDown.reverse();
};

/** PROOF(oldSize, D[newSize]) = SUBPROOF(oldSize, D[newSize], true) as ranges, in proof order. */
export const consistencyRanges = (oldSize: number, newSize: number): Range[] => {
  checkSize('oldSize', oldSize);
  checkSize('newSize', newSize);
  if (oldSize > newSize) throw new RangeError(`old size ${oldSize} is larger than new size ${newSize}`);
  if (oldSize === 0 || oldSize === newSize) return [];
  const topDown: Range[] = [];
  let m = oldSize;
  let lo = 0;
  let hi = newSize;
  let wholeOldTree = true;
  while (m !== hi - lo) {
    const k = splitPoint(hi - lo);
    if (m <= k) {
      topDown.push([lo + k, hi]);
      hi = lo + k;
    } else {
      topDown.push([lo, lo + k]);
      m -= k;
      lo += k;
      wholeOldTree = false;
    }
  }
  // The old root itself is left out only when it is the whole old tree: the verifier has it.
  if (!wholeOldTree) topDown.push([lo, hi]);
  return topDown.reverse();
};

/** The perfect subtrees that make up [0, size), left to right: one per set bit, largest first. */
export const frontierRanges = (size: number): Range[] => {
  checkSize('size', size);
  const ranges: Range[] = [];
  let lo = 0;
  let bit = 1;
  while (bit * 2 <= size) bit *= 2;
  for (; bit >= 1; bit /= 2) {
    if (size - lo >= bit) {
      ranges.push([lo, lo + bit]);
      lo += bit;
    }
  }
  return ranges;
};

export const rootOfFrontier = (frontier: readonly Uint8Array[]): Buffer => {
  const last = frontier.at(-1);
  if (last === undefined) return EMPTY_ROOT;
  let h: Buffer = Buffer.from(last);
  for (let i = frontier.length - 2; i >= 0; i--) h = nodeHash(frontier[i]!, h);
  return h;
};

const popcount = (n: number): number => {
  let count = 0;
  for (let rest = n; rest > 0; rest = half(rest)) if (isOdd(rest)) count++;
  return count;
};

/** Compact-range append: returns the frontier of [0, size + leaves.length). */
export const appendLeaves = (
  frontier: readonly Uint8Array[],
  size: number,
  leaves: readonly Uint8Array[],
): Buffer[] => {
  checkSize('size', size);
  if (frontier.length !== popcount(size)) {
    throw new RangeError(`a frontier of size ${size} has ${popcount(size)} hashes, got ${frontier.length}`);
  }
  const stack: Buffer[] = frontier.map((h) => Buffer.from(h));
  let n = size;
  for (const leaf of leaves) {
    let merged: Buffer = Buffer.from(leaf);
    // Each trailing 1 bit of n is a perfect subtree the size of the one being carried: merge them.
    for (let carry = n; isOdd(carry); carry = half(carry)) merged = nodeHash(stack.pop()!, merged);
    stack.push(merged);
    n++;
  }
  return stack;
};

/**
 * MTH(D[lo:hi]) for a node of the RFC 9162 tree (every proof range is one), asking `perfect` only
 * for aligned power-of-two ranges, which is what a store of perfect-subtree hashes can answer.
 */
export const hashRange = (lo: number, hi: number, perfect: (lo: number, hi: number) => Buffer): Buffer => {
  checkSize('lo', lo);
  checkSize('hi', hi);
  if (hi <= lo) throw new RangeError(`empty range [${lo}, ${hi})`);
  const width = hi - lo;
  const span = isPowerOfTwo(width) ? width : splitPoint(width) * 2;
  if (lo % span !== 0) throw new RangeError(`[${lo}, ${hi}) is not a node of a Merkle tree`);
  if (span === width) return perfect(lo, hi);
  const k = span / 2;
  return nodeHash(perfect(lo, lo + k), hashRange(lo + k, hi, perfect));
};

/** RFC 9162 2.1.3.2. */
export const verifyInclusion = (
  index: number,
  size: number,
  leaf: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean => {
  if (!isSize(index) || !isSize(size) || index >= size) return false;
  if (!isHash(leaf) || !isHash(root) || !Array.isArray(proof) || !proof.every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && Buffer.from(r).equals(root);
};

/**
 * RFC 9162 2.1.4.2, plus the two cases the RFC leaves to the caller: equal sizes need an empty
 * proof and equal roots; an empty old tree needs an empty proof and the empty root.
 */
export const verifyConsistency = (
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean => {
  if (!isSize(oldSize) || !isSize(newSize) || oldSize > newSize) return false;
  if (!isHash(oldRoot) || !isHash(newRoot) || !Array.isArray(proof) || !proof.every(isHash)) return false;
  if (oldSize === newSize) return proof.length === 0 && Buffer.from(oldRoot).equals(newRoot);
  if (oldSize === 0) return proof.length === 0 && EMPTY_ROOT.equals(oldRoot);
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Uint8Array = path[0]!;
  let sr: Uint8Array = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && Buffer.from(fr).equals(oldRoot) && Buffer.from(sr).equals(newRoot);
};

/**
 * A whole tree in memory, for batches and tests. Only perfect subtrees are stored (level l holds
 * the floor(n / 2^l) complete nodes of width 2^l, packed in one buffer); every other MTH a root or
 * proof needs is a right edge, recomputed by hashRange in O(log n).
 */
export class MerkleTree {
  private readonly levels: Buffer[];

  constructor(leaves: readonly Uint8Array[]) {
    for (const [i, leaf] of leaves.entries()) {
      if (!isHash(leaf)) throw new RangeError(`leaf ${i} is not a ${HASH_BYTES}-byte hash`);
    }
    const levels = [Buffer.concat(leaves)];
    const input = Buffer.allocUnsafe(1 + 2 * HASH_BYTES);
    input[0] = 0x01;
    for (let below = levels[0]!; below.length >= 2 * HASH_BYTES; ) {
      const count = Math.floor(below.length / (2 * HASH_BYTES));
      const level = Buffer.allocUnsafe(count * HASH_BYTES);
      for (let i = 0; i < count; i++) {
        below.copy(input, 1, i * 2 * HASH_BYTES, (i + 1) * 2 * HASH_BYTES);
        sha256Into(input, level, i * HASH_BYTES);
      }
      levels.push(level);
      below = level;
    }
    this.levels = levels;
  }

  get size(): number {
    return this.levels[0]!.length / HASH_BYTES;
  }

  /** The stored MTH of the aligned perfect subtree [lo, hi). */
  private readonly perfect = (lo: number, hi: number): Buffer => {
    const width = hi - lo;
    const level = this.levels[Math.log2(width)];
    const offset = (lo / width) * HASH_BYTES;
    if (!isPowerOfTwo(width) || lo % width !== 0 || level === undefined || offset >= level.length) {
      throw new RangeError(`[${lo}, ${hi}) is not a stored perfect subtree`);
    }
    return Buffer.from(level.subarray(offset, offset + HASH_BYTES));
  };

  private checkWithin(size: number) {
    checkSize('size', size);
    if (size > this.size) throw new RangeError(`size ${size} is past the tree's ${this.size} leaves`);
  }

  leaf(index: number): Buffer {
    return this.perfect(index, index + 1);
  }

  root(size = this.size): Buffer {
    return rootOfFrontier(this.frontier(size));
  }

  /** The MTH of each perfect subtree of [0, size): what an archive carries as its frontier. */
  frontier(size = this.size): Buffer[] {
    this.checkWithin(size);
    return frontierRanges(size).map(([lo, hi]) => this.perfect(lo, hi));
  }

  inclusionProof(index: number, size = this.size): Buffer[] {
    this.checkWithin(size);
    return inclusionRanges(index, size).map(([lo, hi]) => hashRange(lo, hi, this.perfect));
  }

  consistencyProof(oldSize: number, newSize = this.size): Buffer[] {
    this.checkWithin(newSize);
    return consistencyRanges(oldSize, newSize).map(([lo, hi]) => hashRange(lo, hi, this.perfect));
  }
}
