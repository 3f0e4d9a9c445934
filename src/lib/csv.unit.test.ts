import { describe, expect, it } from 'vitest';
import { csvCell, csvDataLine, csvLine } from './csv.js';

describe('csvCell (exports opened in a spreadsheet)', () => {
  it('neutralises every text a spreadsheet would run as a formula', () => {
    for (const text of ['=HYPERLINK("http://x","y")', '+1+cmd|x', '-2+3', '@SUM(A1)', '\t=1', '\r=1', '=1'])
      expect(csvCell(text).replace(/^"|"$/g, '').startsWith("'")).toBe(true);
  });

  it('keeps plain numbers numbers, negative ones included', () => {
    expect(csvCell('-0.25')).toBe('-0.25');
    expect(csvCell('-12')).toBe('-12');
    expect(csvCell(-3)).toBe('-3');
    expect(csvCell('1.5e-7')).toBe('1.5e-7');
  });

  it('quotes commas, quotes and line breaks (RFC 4180), and writes null as empty', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('=a,b')).toBe(`"'=a,b"`);
    expect(csvCell(null)).toBe('');
    expect(csvLine(['x', null, 1])).toBe('x,,1\r\n');
  });
});

describe('csvDataLine (files the service reads back)', () => {
  it('quotes as RFC 4180 asks and keeps every value as it is, formula-like text included', () => {
    expect(csvDataLine(['=x', '-1', 'a,b', 'say "hi"', null, true, 2])).toBe(
      '=x,-1,"a,b","say ""hi""",,true,2\n',
    );
  });
});
