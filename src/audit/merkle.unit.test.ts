import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  appendLeaves,
  consistencyRanges,
  EMPTY_ROOT,
  frontierRanges,
  hashRange,
  inclusionRanges,
  leafHash,
  MerkleTree,
  nodeHash,
  perfectRoot,
  type Range,
  rootOfFrontier,
  verifyConsistency,
  verifyInclusion,
} from './merkle.js';

/* The RFC 9162 2.1 definitions, written straight from the text over lists of entries. */

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const largestPowerOfTwoBelow = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
const MTH = (D: Buffer[]): Buffer => {
  const n = D.length;
  if (n === 0) return sha256();
  if (n === 1) return sha256(Buffer.from([0x00]), D[0]!);
  const known = memo.get(D[0]!)?.get(n);
  if (known) return known;
  const k = largestPowerOfTwoBelow(n);
  const mth = sha256(Buffer.from([0x01]), MTH(D.slice(0, k)), MTH(D.slice(k, n)));
  memo.set(D[0]!, (memo.get(D[0]!) ?? new Map()).set(n, mth));
  return mth;
};
/** The fixtures' entries are distinct objects, so a slice is known by its first entry and length. */
const memo = new Map<Buffer, Map<number, Buffer>>();
const PATH = (m: number, D: Buffer[]): Buffer[] => {
  const n = D.length;
  if (n === 1) return [];
  const k = largestPowerOfTwoBelow(n);
  if (m < k) return [...PATH(m, D.slice(0, k)), MTH(D.slice(k, n))];
  return [...PATH(m - k, D.slice(k, n)), MTH(D.slice(0, k))];
};
const SUBPROOF = (m: number, D: Buffer[], b: boolean): Buffer[] => {
  const n = D.length;
  if (m === n) return b ? [] : [MTH(D)];
  const k = largestPowerOfTwoBelow(n);
  if (m <= k) return [...SUBPROOF(m, D.slice(0, k), b), MTH(D.slice(k, n))];
  return [...SUBPROOF(m - k, D.slice(k, n), false), MTH(D.slice(0, k))];
};
const PROOF = (m: number, D: Buffer[]) => SUBPROOF(m, D, true);

/* Fixtures. */

const hex = (buffers: readonly Buffer[]) => buffers.map((b) => b.toString('hex'));
const entries = (n: number, seed = 'e') => Array.from({ length: n }, (_, i) => Buffer.from(`${seed}-${i}`));
const MAX = 70;
const D = entries(MAX);
const LEAVES = D.map(leafHash);
const tree = new MerkleTree(LEAVES);
/** MTH of a leaf range of D, to compare ranges with the naive hashes. */
const mthOf = ([lo, hi]: Range) => MTH(D.slice(lo, hi));
/** What a store of perfect-subtree hashes can answer, and nothing else. */
const perfectOf = (lo: number, hi: number) => {
  if (!Number.isInteger(Math.log2(hi - lo)) || lo % (hi - lo) !== 0) throw new Error(`[${lo}, ${hi}) asked`);
  return MTH(D.slice(lo, hi));
};
const sizes = Array.from({ length: MAX }, (_, i) => i + 1);

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const flips = (proof: Buffer[]): Buffer[][] => {
  const out: Buffer[][] = [];
  for (let i = 0; i < proof.length; i++) {
    for (let bit = 0; bit < 256; bit++) {
      const copy = proof.map((p) => Buffer.from(p));
      copy[i]![bit >> 3]! ^= 1 << (bit & 7);
      out.push(copy);
    }
  }
  return out;
};
const BITS = Array.from({ length: 256 }, (_, bit) => bit);
const flipBit = (h: Buffer, bit: number) => {
  const copy = Buffer.from(h);
  copy[bit >> 3]! ^= 1 << (bit & 7);
  return copy;
};
const reshaped = (proof: Buffer[]): Buffer[][] => [
  ...proof.map((_, i) => proof.slice(0, i)),
  [...proof, EMPTY_ROOT],
  [...proof, proof.at(-1) ?? EMPTY_ROOT],
  [EMPTY_ROOT, ...proof],
];

describe('RFC 6962 / 9162 known answers', () => {
  const CT = [
    '',
    '00',
    '10',
    '2021',
    '3031',
    '40414243',
    '5051525354555657',
    '606162636465666768696a6b6c6d6e6f',
  ];
  const ROOTS = [
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
    'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
    '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
    'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
    '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
  ];
  const ct = new MerkleTree(CT.map((h) => leafHash(Buffer.from(h, 'hex'))));

  it('reproduces the roots of every prefix of the 8 CT test leaves', () => {
    expect(EMPTY_ROOT.toString('hex')).toBe(ROOTS[0]);
    for (let n = 0; n <= 8; n++) {
      expect(ct.root(n).toString('hex')).toBe(ROOTS[n]);
      expect(MTH(CT.slice(0, n).map((h) => Buffer.from(h, 'hex'))).toString('hex')).toBe(ROOTS[n]);
    }
  });

  it('reproduces the published inclusion proofs', () => {
    const cases: [number, number, string[]][] = [
      [
        0,
        8,
        [
          '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
          '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
          '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
        ],
      ],
      [
        5,
        8,
        [
          'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
          'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
          'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
        ],
      ],
    ];
    for (const [index, size, proof] of cases) {
      expect(hex(ct.inclusionProof(index, size))).toEqual(proof);
      const leaf = ct.leaf(index);
      const proofBytes = proof.map((h) => Buffer.from(h, 'hex'));
      expect(verifyInclusion(index, size, leaf, proofBytes, Buffer.from(ROOTS[size]!, 'hex'))).toBe(true);
    }
  });

  it('reproduces the published consistency proofs', () => {
    const cases: [number, number, string[]][] = [
      [
        1,
        8,
        [
          '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
          '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
          '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
        ],
      ],
      [
        6,
        8,
        [
          '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
          'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
          'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
        ],
      ],
      [
        2,
        5,
        [
          '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
          'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
        ],
      ],
      [
        3,
        8,
        [
          '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
          '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
          'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
          '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
        ],
      ],
    ];
    for (const [m, n, proof] of cases) {
      expect(hex(ct.consistencyProof(m, n))).toEqual(proof);
      const [oldRoot, newRoot] = [ROOTS[m]!, ROOTS[n]!].map((h) => Buffer.from(h, 'hex'));
      const proofBytes = proof.map((h) => Buffer.from(h, 'hex'));
      expect(verifyConsistency(m, n, oldRoot!, newRoot!, proofBytes)).toBe(true);
    }
  });
});

describe('against the RFC definitions, every size 1..70', () => {
  it('roots, frontiers and appends', () => {
    expect(tree.root(0)).toEqual(EMPTY_ROOT);
    expect(rootOfFrontier([])).toEqual(EMPTY_ROOT);
    for (const n of sizes) {
      const root = MTH(D.slice(0, n));
      expect(tree.root(n)).toEqual(root);
      const ranges = frontierRanges(n);
      expect(ranges.length).toBe(n.toString(2).replaceAll('0', '').length);
      expect(ranges.flat()).toEqual([0, ...ranges.flatMap(([, hi]) => [hi, hi]).slice(0, -1)]);
      expect(ranges.at(-1)?.[1]).toBe(n);
      for (const [lo, hi] of ranges) expect(lo % (hi - lo)).toBe(0);
      const frontier = ranges.map(mthOf);
      expect(tree.frontier(n)).toEqual(frontier);
      expect(rootOfFrontier(frontier)).toEqual(root);
      for (let m = 0; m <= n; m++) {
        expect(hex(appendLeaves(tree.frontier(m), m, LEAVES.slice(m, n)))).toEqual(hex(frontier));
      }
    }
  });

  it('inclusion proofs', () => {
    for (const n of sizes) {
      for (let m = 0; m < n; m++) {
        const naive = PATH(m, D.slice(0, n));
        const ranges = inclusionRanges(m, n);
        expect(hex(ranges.map(mthOf))).toEqual(hex(naive));
        expect(hex(ranges.map(([lo, hi]) => hashRange(lo, hi, perfectOf)))).toEqual(hex(naive));
        expect(hex(tree.inclusionProof(m, n))).toEqual(hex(naive));
        expect(verifyInclusion(m, n, LEAVES[m]!, naive, tree.root(n))).toBe(true);
      }
      expect(() => inclusionRanges(n, n)).toThrow(RangeError);
    }
  });

  it('consistency proofs', () => {
    for (const n of sizes) {
      for (let m = 0; m <= n; m++) {
        const naive = m === 0 ? [] : PROOF(m, D.slice(0, n));
        const ranges = consistencyRanges(m, n);
        expect(hex(ranges.map(mthOf))).toEqual(hex(naive));
        expect(hex(ranges.map(([lo, hi]) => hashRange(lo, hi, perfectOf)))).toEqual(hex(naive));
        expect(hex(tree.consistencyProof(m, n))).toEqual(hex(naive));
        expect(verifyConsistency(m, n, tree.root(m), tree.root(n), naive)).toBe(true);
      }
      expect(() => consistencyRanges(n + 1, n)).toThrow(RangeError);
    }
  });
});

describe('verification rejects tampering', () => {
  it('every bit flip of an inclusion proof, leaf or root, and every truncation or extension', () => {
    for (const n of [1, 2, 3, 5, 8, 13, 21, 32, 33]) {
      const root = tree.root(n);
      for (let m = 0; m < n; m++) {
        const proof = tree.inclusionProof(m, n);
        const leaf = LEAVES[m]!;
        expect(verifyInclusion(m, n, leaf, proof, root)).toBe(true);
        const accepted = [
          ...flips(proof).filter((bad) => verifyInclusion(m, n, leaf, bad, root)),
          ...BITS.filter((bit) => verifyInclusion(m, n, flipBit(leaf, bit), proof, root)),
          ...BITS.filter((bit) => verifyInclusion(m, n, leaf, proof, flipBit(root, bit))),
          ...reshaped(proof).filter((bad) => verifyInclusion(m, n, leaf, bad, root)),
        ];
        expect(accepted).toEqual([]);
        // The same proof does not prove another position (the size is bound by the signed head),
        // nor one past the end of the tree, where the bits of index and size no longer agree.
        if (m + 1 < n) expect(verifyInclusion(m + 1, n, leaf, proof, root)).toBe(false);
        expect(verifyInclusion(m + n, n, leaf, proof, root)).toBe(false);
        // An interior node passed off as a leaf with the rest of its path: the hashes chain up to
        // the root, only the proof length gives it away.
        for (let j = 1; j < proof.length; j++) {
          const lo = m - (m % 2 ** j);
          if (lo + 2 ** j > n) continue;
          const node = hashRange(lo, lo + 2 ** j, perfectOf);
          for (const index of [m, m >> j, lo]) {
            expect(verifyInclusion(index, n, node, proof.slice(j), root)).toBe(false);
          }
        }
      }
    }
  });

  it('every bit flip of a consistency proof or root, and every truncation or extension', () => {
    for (const n of [2, 3, 5, 8, 13, 21, 32, 33]) {
      const newRoot = tree.root(n);
      for (let m = 1; m < n; m++) {
        const oldRoot = tree.root(m);
        const proof = tree.consistencyProof(m, n);
        expect(verifyConsistency(m, n, oldRoot, newRoot, proof)).toBe(true);
        const accepted = [
          ...flips(proof).filter((bad) => verifyConsistency(m, n, oldRoot, newRoot, bad)),
          ...BITS.filter((bit) => verifyConsistency(m, n, flipBit(oldRoot, bit), newRoot, proof)),
          ...BITS.filter((bit) => verifyConsistency(m, n, oldRoot, flipBit(newRoot, bit), proof)),
          ...reshaped(proof).filter((bad) => verifyConsistency(m, n, oldRoot, newRoot, bad)),
        ];
        expect(accepted).toEqual([]);
        if (m > 1) expect(verifyConsistency(m - 1, n, oldRoot, newRoot, proof)).toBe(false);
      }
    }
  });

  it('the edge cases the RFC leaves to the caller', () => {
    const r5 = tree.root(5);
    expect(verifyConsistency(5, 5, r5, r5, [])).toBe(true);
    expect(verifyConsistency(5, 5, r5, tree.root(6), [])).toBe(false);
    expect(verifyConsistency(5, 5, r5, r5, [r5])).toBe(false);
    expect(verifyConsistency(0, 5, EMPTY_ROOT, r5, [])).toBe(true);
    expect(verifyConsistency(0, 5, r5, r5, [])).toBe(false);
    expect(verifyConsistency(0, 5, EMPTY_ROOT, r5, [r5])).toBe(false);
    expect(verifyConsistency(6, 5, r5, r5, [])).toBe(false);
    expect(verifyConsistency(3, 5, tree.root(3), r5, [])).toBe(false);
  });

  it('never throws on garbage', () => {
    const root = tree.root(8);
    const proof = tree.inclusionProof(3, 8);
    const garbage: unknown[] = [undefined, null, -1, 1.5, Number.NaN, 2 ** 60, 'x', {}, [], Buffer.alloc(31)];
    for (const g of garbage) {
      const any = g as never;
      expect(verifyInclusion(any, 8, LEAVES[3]!, proof, root)).toBe(false);
      expect(verifyInclusion(3, any, LEAVES[3]!, proof, root)).toBe(false);
      expect(verifyInclusion(3, 8, any, proof, root)).toBe(false);
      expect(verifyInclusion(3, 8, LEAVES[3]!, any, root)).toBe(false);
      expect(verifyInclusion(3, 8, LEAVES[3]!, [any], root)).toBe(false);
      expect(verifyInclusion(3, 8, LEAVES[3]!, proof, any)).toBe(false);
      expect(verifyConsistency(any, 8, root, root, proof)).toBe(false);
      expect(verifyConsistency(3, any, root, root, proof)).toBe(false);
      expect(verifyConsistency(3, 8, any, root, proof)).toBe(false);
      expect(verifyConsistency(3, 8, root, any, proof)).toBe(false);
      expect(verifyConsistency(3, 8, root, root, any)).toBe(false);
      expect(verifyConsistency(3, 8, root, root, [any, ...proof])).toBe(false);
    }
    // Huge sizes stay exact arithmetic and simply fail.
    expect(verifyInclusion(2 ** 52, 2 ** 53 - 1, LEAVES[0]!, proof, root)).toBe(false);
    expect(verifyConsistency(2 ** 52 + 1, 2 ** 53 - 1, root, root, proof)).toBe(false);
  });
});

describe('the pieces the sealer builds proofs from', () => {
  it('appendLeaves checks the frontier matches the size', () => {
    expect(() => appendLeaves([], 1, [LEAVES[1]!])).toThrow(RangeError);
    expect(() => appendLeaves(tree.frontier(3), 4, [])).toThrow(RangeError);
  });

  it('hashRange refuses ranges that are not tree nodes', () => {
    expect(() => hashRange(1, 3, perfectOf)).toThrow(RangeError);
    expect(() => hashRange(2, 7, perfectOf)).toThrow(RangeError);
    expect(() => hashRange(4, 4, perfectOf)).toThrow(RangeError);
    expect(hashRange(4, 7, perfectOf)).toEqual(MTH(D.slice(4, 7)));
    expect(nodeHash(LEAVES[0]!, LEAVES[1]!)).toEqual(MTH(D.slice(0, 2)));
  });

  it('perfectRoot hashes a run of concatenated leaves as the tree does, and refuses bad runs', () => {
    const leaves = Buffer.concat(LEAVES.slice(0, 64));
    for (const count of [1, 2, 4, 8, 16, 32])
      for (const first of [0, count, 32 - count, 64 - count])
        expect(perfectRoot(leaves, first * 32, count), `${count} from ${first}`).toEqual(
          MTH(D.slice(first, first + count)),
        );
    // The input buffer is not written to.
    expect(leaves).toEqual(Buffer.concat(LEAVES.slice(0, 64)));
    expect(() => perfectRoot(leaves, 0, 3)).toThrow(RangeError);
    expect(() => perfectRoot(leaves, 0, 0)).toThrow(RangeError);
    expect(() => perfectRoot(leaves, 40 * 32, 32)).toThrow(RangeError);
    expect(() => perfectRoot(leaves, -32, 1)).toThrow(RangeError);
  });

  it('range functions reject bad arguments', () => {
    expect(() => inclusionRanges(-1, 3)).toThrow(RangeError);
    expect(() => inclusionRanges(0, 0)).toThrow(RangeError);
    expect(() => consistencyRanges(1.5, 3)).toThrow(RangeError);
    expect(() => frontierRanges(-2)).toThrow(RangeError);
    expect(() => tree.root(MAX + 1)).toThrow(RangeError);
    expect(() => tree.inclusionProof(0, MAX + 1)).toThrow(RangeError);
    expect(() => new MerkleTree([Buffer.alloc(31)])).toThrow(RangeError);
  });
});

describe('large trees', () => {
  const rand = random(9162);
  const bigEntries = entries(5000, 'big');
  const big = new MerkleTree(bigEntries.map(leafHash));

  it('agree with the RFC definitions at random sizes and positions', () => {
    for (let round = 0; round < 12; round++) {
      const n = 1 + Math.floor(rand() * bigEntries.length);
      const Dn = bigEntries.slice(0, n);
      const m = Math.floor(rand() * n);
      const old = 1 + Math.floor(rand() * n);
      expect(big.root(n)).toEqual(MTH(Dn));
      expect(big.inclusionProof(m, n)).toEqual(PATH(m, Dn));
      expect(big.consistencyProof(old, n)).toEqual(PROOF(old, Dn));
      expect(verifyInclusion(m, n, big.leaf(m), big.inclusionProof(m, n), big.root(n))).toBe(true);
      expect(verifyConsistency(old, n, big.root(old), big.root(n), big.consistencyProof(old, n))).toBe(true);
    }
  });

  it("builds a million leaves and proves in O(log n) hashes (timing is bench:audit's)", () => {
    const n = 1_000_000;
    const leaves = Array.from({ length: n }, (_, i) => {
      const b = Buffer.alloc(32);
      b.writeUInt32BE(i);
      return b;
    });
    const million = new MerkleTree(leaves);
    const proof = million.inclusionProof(777_777, n - 1);
    const consistency = million.consistencyProof(123_457, n - 1);
    const root = million.root(n - 1);
    expect(verifyInclusion(777_777, n - 1, leaves[777_777]!, proof, root)).toBe(true);
    expect(verifyConsistency(123_457, n - 1, million.root(123_457), root, consistency)).toBe(true);
    expect(proof.length).toBe(20);
    expect(consistency.length).toBeLessThanOrEqual(2 * 20);
  });
});
