/**
 * A small RFC 4180 reader that remembers where every cell starts, so each refusal of an import can
 * quote `FILE:LINE:COLUMN` (SPEC 2.8, 7.6 rule 6). Lines and columns are 1-based and count
 * characters, the way an editor shows them; a quoted cell spanning lines starts at its opening quote.
 */

export interface Cell {
  value: string;
  line: number;
  column: number;
}

export interface CsvRecord {
  /** Line of the record's first character. */
  line: number;
  cells: Cell[];
}

export interface CsvTable {
  header: CsvRecord;
  records: CsvRecord[];
}

export interface Refusal {
  file: string;
  line: number;
  column: number;
  message: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export const refuse = (file: string, at: { line: number; column: number }, message: string): Refusal => ({
  file,
  line: at.line,
  column: at.column,
  message,
});

export const formatRefusal = (r: Refusal): string => `${r.file}:${r.line}:${r.column}: ${r.message}`;

const QUOTE = 34;
const COMMA = 44;
const CR = 13;
const LF = 10;

/**
 * Splits `text` into records. Records end at LF or CRLF (a lone CR too, as old spreadsheets write
 * it); blank lines are skipped because hand-edited files grow them and they carry no row. A quote
 * inside an unquoted cell, text after a closing quote, and an unterminated quote are refused.
 */
export const parseCsv = (file: string, input: string): Parsed<CsvTable> => {
  const text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  const records: CsvRecord[] = [];
  let line = 1;
  let lineStart = 0;
  let i = 0;
  let cells: Cell[] = [];
  let recordLine = 1;

  const endLine = (at: number): void => {
    line += 1;
    lineStart = at;
  };

  while (i <= text.length) {
    const cellLine = line;
    const cellColumn = i - lineStart + 1;
    if (cells.length === 0) recordLine = line;
    let value = '';
    const quoted = text.charCodeAt(i) === QUOTE;
    if (quoted) {
      i += 1;
      let closed = false;
      let chunk = i;
      while (i < text.length) {
        const c = text.charCodeAt(i);
        if (c === QUOTE) {
          value += text.slice(chunk, i);
          if (text.charCodeAt(i + 1) === QUOTE) {
            value += '"';
            i += 2;
            chunk = i;
            continue;
          }
          i += 1;
          closed = true;
          break;
        }
        if (c === LF || (c === CR && text.charCodeAt(i + 1) !== LF)) endLine(i + 1);
        i += 1;
      }
      if (!closed) {
        return {
          ok: false,
          refusal: refuse(file, { line: cellLine, column: cellColumn }, 'unterminated quoted cell'),
        };
      }
      const next = text.charCodeAt(i);
      if (i < text.length && next !== COMMA && next !== CR && next !== LF) {
        return {
          ok: false,
          refusal: refuse(file, { line, column: i - lineStart + 1 }, 'unexpected text after a closing quote'),
        };
      }
    } else {
      const start = i;
      while (i < text.length) {
        const c = text.charCodeAt(i);
        if (c === COMMA || c === CR || c === LF) break;
        if (c === QUOTE) {
          return {
            ok: false,
            refusal: refuse(file, { line, column: i - lineStart + 1 }, 'a quote inside an unquoted cell'),
          };
        }
        i += 1;
      }
      value = text.slice(start, i);
    }
    cells.push({ value, line: cellLine, column: cellColumn });

    const c = text.charCodeAt(i);
    if (c === COMMA) {
      i += 1;
      continue;
    }
    // End of record: a newline or the end of the text.
    const blank = cells.length === 1 && value === '' && !quoted;
    if (!blank) records.push({ line: recordLine, cells });
    cells = [];
    if (i >= text.length) break;
    i += c === CR && text.charCodeAt(i + 1) === LF ? 2 : 1;
    endLine(i);
  }

  const [header, ...rest] = records;
  if (header === undefined) {
    return {
      ok: false,
      refusal: refuse(file, { line: 1, column: 1 }, 'the file is empty; a header row is required'),
    };
  }
  return { ok: true, value: { header, records: rest } };
};

/**
 * Maps header names to cell indexes. Every expected column must be present once; an unknown
 * column is refused by name at its own line and column.
 */
export const readHeader = <C extends string>(
  file: string,
  header: CsvRecord,
  expected: readonly C[],
): Parsed<Record<C, number>> => {
  const index = new Map<string, number>();
  for (const [i, cell] of header.cells.entries()) {
    const name = cell.value.trim();
    if (!(expected as readonly string[]).includes(name)) {
      return { ok: false, refusal: refuse(file, cell, `unknown column "${name}"`) };
    }
    if (index.has(name)) return { ok: false, refusal: refuse(file, cell, `column "${name}" appears twice`) };
    index.set(name, i);
  }
  const missing = expected.filter((c) => !index.has(c));
  if (missing.length > 0) {
    const at = { line: header.line, column: 1 };
    return {
      ok: false,
      refusal: refuse(file, at, `missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`),
    };
  }
  return { ok: true, value: Object.fromEntries(index) as Record<C, number> };
};

/** Cells of one record by column name; a record with the wrong number of cells is refused. */
export const rowCells = <C extends string>(
  file: string,
  record: CsvRecord,
  columns: Record<C, number>,
  width: number,
): Parsed<Record<C, Cell>> => {
  if (record.cells.length !== width) {
    const last = record.cells[record.cells.length - 1] ?? { line: record.line, column: 1 };
    return {
      ok: false,
      refusal: refuse(file, last, `expected ${width} cells as in the header, found ${record.cells.length}`),
    };
  }
  const out = {} as Record<C, Cell>;
  for (const [name, i] of Object.entries(columns) as [C, number][]) out[name] = record.cells[i] as Cell;
  return { ok: true, value: out };
};
