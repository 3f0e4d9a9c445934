import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth.js';

describe('nestsDeeperThan', () => {
  const nested = (depth: number) => `${'{"a":['.repeat(depth)}1${']}'.repeat(depth)}`;

  it('counts objects and arrays opened inside one another', () => {
    expect(nestsDeeperThan(nested(2), 4)).toBe(false);
    expect(nestsDeeperThan(nested(2), 3)).toBe(true);
    expect(nestsDeeperThan(`[${'[]'.repeat(1_000)}]`, 2)).toBe(false);
    expect(nestsDeeperThan(`${'['.repeat(10_000)}${']'.repeat(10_000)}`, 128)).toBe(true);
  });

  it('brackets inside strings, escaped quotes included, do not count', () => {
    expect(nestsDeeperThan(`{"a":"${'['.repeat(500)}"}`, 2)).toBe(false);
    expect(nestsDeeperThan(`{"a":"\\"${'{'.repeat(500)}"}`, 2)).toBe(false);
    expect(nestsDeeperThan(`{"a\\\\":[[[1]]]}`, 3)).toBe(true);
  });
});
