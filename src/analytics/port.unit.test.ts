import { describe, expect, it } from 'vitest';
import { decodeJsonEachRow, encodeJsonCompactEachRowWithNames, encodeJsonEachRow } from './port.js';

describe('JSONEachRow encoding', () => {
  it('writes one line per row, bigint as an exact decimal string and dates as ISO-8601', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const text = encodeJsonEachRow([
      { id: 'a', n: 1, at },
      { id: 'b', big: 2n ** 64n + 1n, nested: { also: 3n } },
      { id: 'c', n: null },
    ]);
    expect(text).toBe(
      '{"id":"a","n":1,"at":"2026-01-02T03:04:05.678Z"}\n' +
        '{"id":"b","big":"18446744073709551617","nested":{"also":"3"}}\n' +
        '{"id":"c","n":null}\n',
    );
    expect(decodeJsonEachRow(text)).toHaveLength(3);
  });

  it('is empty for no rows', () => {
    expect(encodeJsonEachRow([])).toBe('');
  });

  it('writes rows of one shape as JSONCompactEachRowWithNames: names once, then values', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(
      encodeJsonCompactEachRowWithNames([
        { id: 'a', n: 1, at, big: 2n ** 64n },
        { id: 'b', n: null, at, big: 0 },
      ]),
    ).toBe(
      '["id","n","at","big"]\n' +
        '["a",1,"2026-01-02T03:04:05.678Z","18446744073709551616"]\n' +
        '["b",null,"2026-01-02T03:04:05.678Z",0]\n',
    );
    expect(encodeJsonCompactEachRowWithNames([])).toBe('');
  });

  it('declines rows of another shape, undefined values and nested values, for JSONEachRow to carry', () => {
    expect(
      encodeJsonCompactEachRowWithNames([
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ]),
    ).toBeNull();
    expect(encodeJsonCompactEachRowWithNames([{ a: 1, b: 2 }, { a: 1 }])).toBeNull();
    expect(encodeJsonCompactEachRowWithNames([{ a: 1, b: undefined }])).toBeNull();
    expect(encodeJsonCompactEachRowWithNames([{ a: 1, b: { c: 2 } }])).toBeNull();
    expect(encodeJsonCompactEachRowWithNames([{ a: 1, b: [1, 2] }])).toBeNull();
  });
});
