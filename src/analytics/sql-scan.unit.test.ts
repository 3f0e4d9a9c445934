import { describe, expect, it } from 'vitest';
import { columnsOf, scan } from './sql-scan.js';

describe('scan', () => {
  it('drops comments and blanks quoted text and the inside of brackets, offset for offset', () => {
    const s = scan("  -- it's a comment\nSELECT f('a)b', `x y`) /* ( */ FROM t -- end\n");
    expect(s.text).toBe("SELECT f('a)b', `x y`)   FROM t");
    expect(s.masked).toBe("SELECT f('   ', `   `)   FROM t");
    expect(s.top).toBe(`SELECT f(${' '.repeat("'a)b', `x y`".length)})   FROM t`);
  });

  it('keeps offsets across escapes and characters outside the BMP', () => {
    const s = scan("SELECT '\\'😀' AS 😀x, (1) AS y");
    expect(s.masked).toHaveLength(s.text.length);
    expect(s.top).toHaveLength(s.text.length);
    expect(s.top.indexOf('AS y')).toBe(s.text.indexOf('AS y'));
  });

  it('refuses what it cannot delimit', () => {
    expect(() => scan("SELECT 'a")).toThrow(/unterminated '/);
    expect(() => scan('SELECT (1')).toThrow(/unbalanced/);
    expect(() => scan('SELECT 1)')).toThrow(/unbalanced/);
    expect(() => scan('SELECT /* 1')).toThrow(/unterminated comment/);
    // ClickHouse reads these; the scanner would not, so a key could hide behind one.
    expect(() => scan('ENGINE = ReplacingMergeTree(v) # was ORDER BY request_id\nORDER BY org_id')).toThrow(
      /# comment/,
    );
    expect(() => scan('SELECT $$a)$$')).toThrow(/\$\$ string/);
    expect(() => scan('SELECT /* a /* b */ ORDER BY x */ 1')).toThrow(/nested/);
    expect(scan("SELECT '#' AS h, `$$` AS d").text).toBe("SELECT '#' AS h, `$$` AS d");
  });
});

describe('columnsOf', () => {
  it('names the columns an expression reads, not the functions it calls', () => {
    expect([...columnsOf('(org_id, toDate(started_at), request_id)')]).toEqual([
      'org_id',
      'started_at',
      'request_id',
    ]);
  });
});
