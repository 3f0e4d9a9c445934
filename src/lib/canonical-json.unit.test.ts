import { describe, expect, it } from 'vitest';
import { prng } from '../../test/helpers/fuzz.js';
import { canonicalJson, isCanonicalJsonText } from './canonical-json.js';

/** The audit log's canonical bytes (SPEC 1.8, 6): the fast check must decide as canonicalJson does. */

const longWay = (text: string): boolean => {
  try {
    return canonicalJson(JSON.parse(text)) === text;
  } catch {
    return false;
  }
};

describe('isCanonicalJsonText', () => {
  it.each([
    ['{"a":1,"b":[{"c":"x","d":null}]}', true],
    ['{"b":1,"a":2}', false],
    ['{"a":1, "b":2}', false],
    ['{"a":1,"a":2}', false],
    ['{"a":"\\u0041"}', false],
    ['{"a":1.0}', false],
    ['{"a":-0}', false],
    ['{"a":1e999}', false],
    // Keys that look like array indexes: objects list them first, in numeric order.
    ['{"1":0,"10":0,"2":0}', true],
    ['{"1":0,"2":0,"10":0}', false],
    ['{"10":0,"a":0}', true],
    ['{"a":0,"10":0}', false],
    ['{"é":0,"z":0}', false],
    ['{"z":0,"é":0}', true],
    ['{"\\ud83d\\ude00":0}', false],
    // Ordered by UTF-16 code unit, as canonicalJson sorts: a surrogate pair before U+FF5A.
    ['{"😀":0,"ｚ":0}', true],
    ['{"ｚ":0,"😀":0}', false],
    ['[3,{"b":{"d":1,"c":2}}]', false],
  ])('%s: %s', (text, canonical) => {
    expect(longWay(text)).toBe(canonical);
    expect(isCanonicalJsonText(JSON.parse(text), text)).toBe(canonical);
  });

  it('agrees with canonicalJson on random records and their reorderings', () => {
    const rand = prng(7);
    const keys = ['a', 'b', 'B', '0', '1', '10', '2', '-1', '01', 'é', '😀', 'ｚ', '__proto__x', ''];
    const value = (depth: number): unknown => {
      const r = rand();
      if (depth > 3 || r < 0.3) return [1, -2.5, 'x', null, true, 1e21, '\u2028'][Math.floor(rand() * 7)];
      if (r < 0.5) return Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: Math.floor(rand() * 5) }, () => [
          keys[Math.floor(rand() * keys.length)]!,
          value(depth + 1),
        ]),
      );
    };
    let canonicalSeen = 0;
    for (let i = 0; i < 2000; i++) {
      const v = value(0);
      for (const text of [canonicalJson(v), JSON.stringify(v)]) {
        const expected = longWay(text);
        canonicalSeen += expected ? 1 : 0;
        expect(isCanonicalJsonText(JSON.parse(text), text), text).toBe(expected);
      }
    }
    expect(canonicalSeen).toBeGreaterThan(2000);
  });
});
