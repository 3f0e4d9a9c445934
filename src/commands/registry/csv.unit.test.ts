import { describe, expect, it } from 'vitest';
import { type CsvTable, formatRefusal, type Parsed, parseCsv, readHeader, rowCells } from './csv.js';

const table = (text: string): CsvTable => {
  const parsed = parseCsv('f.csv', text);
  if (!parsed.ok) throw new Error(formatRefusal(parsed.refusal));
  return parsed.value;
};

const refusal = (parsed: Parsed<unknown>): string => {
  if (parsed.ok) throw new Error('expected a refusal');
  return formatRefusal(parsed.refusal);
};

const values = (t: CsvTable) => t.records.map((r) => r.cells.map((c) => c.value));

describe('parseCsv (RFC 4180 with positions)', () => {
  it('reads plain cells with their line and column', () => {
    const t = table('a,bb,c\n1,22,\n');
    expect(t.header.cells.map((c) => [c.value, c.line, c.column])).toEqual([
      ['a', 1, 1],
      ['bb', 1, 3],
      ['c', 1, 6],
    ]);
    expect(t.records[0]!.cells.map((c) => [c.value, c.line, c.column])).toEqual([
      ['1', 2, 1],
      ['22', 2, 3],
      ['', 2, 6],
    ]);
  });

  it('unquotes quoted cells with commas and escaped quotes', () => {
    expect(values(table('h1,h2\n"a, b","say ""hi"""\n'))).toEqual([['a, b', 'say "hi"']]);
  });

  it('treats CRLF, LF and a final record without newline alike', () => {
    expect(values(table('h\r\n1\r\n2'))).toEqual([['1'], ['2']]);
    expect(values(table('h\n1\n2\n'))).toEqual([['1'], ['2']]);
  });

  it('keeps newlines inside a quoted cell and counts the lines they add', () => {
    const t = table('h1,h2\r\n"line one\r\nline two",x\r\ny,z\r\n');
    expect(values(t)).toEqual([
      ['line one\r\nline two', 'x'],
      ['y', 'z'],
    ]);
    expect(t.records[0]!.cells[1]).toMatchObject({ line: 3, column: 11 });
    expect(t.records[1]!.line).toBe(4);
  });

  it('skips blank lines and a byte-order mark', () => {
    const t = table('\ufeffh1,h2\n\n1,2\n\n');
    expect(t.header.cells[0]!.value).toBe('h1');
    expect(values(t)).toEqual([['1', '2']]);
    expect(t.records[0]!.line).toBe(3);
  });

  it('keeps a quoted empty cell as a record', () => {
    expect(values(table('h\n""\n'))).toEqual([['']]);
  });

  it('refuses broken quoting at the exact position', () => {
    expect(refusal(parseCsv('f.csv', 'h1,h2\nab,"open\n'))).toBe('f.csv:2:4: unterminated quoted cell');
    expect(refusal(parseCsv('f.csv', 'h1,h2\nab,c"d\n'))).toBe('f.csv:2:5: a quote inside an unquoted cell');
    expect(refusal(parseCsv('f.csv', 'h1,h2\n"ab"x,c\n'))).toBe(
      'f.csv:2:5: unexpected text after a closing quote',
    );
    expect(refusal(parseCsv('f.csv', ''))).toBe('f.csv:1:1: the file is empty; a header row is required');
  });
});

describe('readHeader and rowCells', () => {
  const columns = ['model', 'price'] as const;

  it('maps columns in any order', () => {
    const h = readHeader('f.csv', table('price,model\n').header, columns);
    expect(h).toEqual({ ok: true, value: { price: 0, model: 1 } });
  });

  it('refuses an unknown column by name, line and column', () => {
    expect(refusal(readHeader('f.csv', table('model,price,colour\n').header, columns))).toBe(
      'f.csv:1:13: unknown column "colour"',
    );
  });

  it('refuses a missing or repeated column', () => {
    expect(refusal(readHeader('f.csv', table('model\n').header, columns))).toBe(
      'f.csv:1:1: missing column price',
    );
    expect(refusal(readHeader('f.csv', table('model,price,model\n').header, columns))).toBe(
      'f.csv:1:13: column "model" appears twice',
    );
  });

  it('refuses a record whose width differs from the header', () => {
    const t = table('model,price\na,1,2\n');
    const h = readHeader('f.csv', t.header, columns);
    if (!h.ok) throw new Error('header');
    expect(refusal(rowCells('f.csv', t.records[0]!, h.value, 2))).toBe(
      'f.csv:2:5: expected 2 cells as in the header, found 3',
    );
  });
});
