import { describe, expect, it } from 'vitest';
import { decodeJsonEachRow, encodeJsonEachRow } from './port.js';

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
});
