import { describe, expect, it } from 'vitest';
import { newGeneration, twoStageCandidates } from './store.js';

describe('newGeneration', () => {
  it('is strictly increasing within a process, even within one millisecond', () => {
    const seen = Array.from({ length: 5_000 }, () => newGeneration());
    for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!).toBe(true);
    // Microseconds since the epoch: above 2020-01-01, and fits UInt64.
    expect(seen[0]! > 1_577_836_800_000_000n).toBe(true);
    expect(seen.at(-1)! < 2n ** 64n).toBe(true);
  });
});

describe('twoStageCandidates', () => {
  it('rescores at least the floor, 10 per result and one per 2,000 live chunks', () => {
    expect(twoStageCandidates(200, 10, 50_000)).toBe(200);
    expect(twoStageCandidates(200, 50, 50_000)).toBe(500);
    expect(twoStageCandidates(200, 10, 1_000_000)).toBe(500);
    expect(twoStageCandidates(200, 10, 3_000_001)).toBe(1501);
  });
});
