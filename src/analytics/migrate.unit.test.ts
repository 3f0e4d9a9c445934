import { describe, expect, it } from 'vitest';
import { splitStatements } from './migrate.js';

describe('splitStatements', () => {
  it('splits on a semicolon ending a line and drops comment-only chunks', () => {
    const sql = [
      '-- 0001: two tables',
      'CREATE TABLE a (x UInt8) ENGINE = MergeTree ORDER BY x;',
      '',
      'CREATE TABLE b (',
      "  s String DEFAULT 'a;b'",
      ') ENGINE = MergeTree ORDER BY s',
      ';',
      '-- trailing comment',
    ].join('\n');
    expect(splitStatements(sql)).toEqual([
      '-- 0001: two tables\nCREATE TABLE a (x UInt8) ENGINE = MergeTree ORDER BY x',
      "CREATE TABLE b (\n  s String DEFAULT 'a;b'\n) ENGINE = MergeTree ORDER BY s",
    ]);
  });

  it('takes a last statement without a semicolon and ignores an empty file', () => {
    expect(splitStatements('SELECT 1;\r\nSELECT 2')).toEqual(['SELECT 1', 'SELECT 2']);
    expect(splitStatements('\n-- nothing\n')).toEqual([]);
  });
});
