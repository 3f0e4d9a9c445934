import { describe, expect, it } from 'vitest';
import { carriesHop, hopValue } from './hop.js';

describe('the hop mark', () => {
  const key = Buffer.alloc(32, 7);
  const own = hopValue(key);

  it('is derived from the master key: stable for one deployment, different for another, not the key', () => {
    expect(hopValue(Buffer.alloc(32, 7))).toBe(own);
    expect(hopValue(Buffer.alloc(32, 8))).not.toBe(own);
    expect(own).not.toContain(key.toString('hex'));
  });

  it('is recognised alone, among several values, or repeated; not when absent or foreign', () => {
    expect(carriesHop(own, own)).toBe(true);
    expect(carriesHop(`other, ${own}`, own)).toBe(true);
    expect(carriesHop(['other', own], own)).toBe(true);
    expect(carriesHop(undefined, own)).toBe(false);
    expect(carriesHop('other', own)).toBe(false);
    expect(carriesHop(hopValue(Buffer.alloc(32, 8)), own)).toBe(false);
  });
});
