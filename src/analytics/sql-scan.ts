/**
 * Where in one ClickHouse statement the SQL is: keywords, brackets and names are looked for in a
 * copy whose comments, quoted literals and quoted identifiers cannot match, at the same offsets as
 * the text they are cut from.
 */

export interface Scanned {
  /** The statement without comments. */
  text: string;
  /** `text` with quoted literals and identifiers blanked: a keyword or bracket found here is SQL. */
  masked: string;
  /** `masked` with the inside of every bracket blanked too: what is found here is top level. */
  top: string;
}

export const scan = (sql: string): Scanned => {
  let text = '';
  let masked = '';
  for (let i = 0; i < sql.length; ) {
    const c = sql[i]!;
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end;
    } else if (c === '#' || (c === '$' && sql[i + 1] === '$')) {
      // ClickHouse's `#` comments and `$$` strings: refused rather than misread.
      throw new Error(
        `a ${c === '#' ? '# comment' : '$$ string'}, which cluster DDL does not read (use -- or '...')`,
      );
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) throw new Error('an unterminated comment');
      // Nested comments end later than the first `*/`: refused rather than misread.
      if (sql.slice(i + 2, end).includes('/*')) throw new Error('a nested /* comment */');
      text += ' ';
      masked += ' ';
      i = end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < sql.length && sql[j] !== c) j += sql[j] === '\\' ? 2 : 1;
      if (j >= sql.length) throw new Error(`an unterminated ${c}`);
      text += sql.slice(i, j + 1);
      masked += c + ' '.repeat(j - i - 1) + c;
      i = j + 1;
    } else {
      text += c;
      masked += c;
      i += 1;
    }
  }
  let top = '';
  let depth = 0;
  for (let i = 0; i < masked.length; i++) {
    const c = masked[i]!;
    if (c === ')') depth -= 1;
    if (depth < 0) throw new Error('unbalanced brackets');
    top += depth === 0 ? c : ' ';
    if (c === '(') depth += 1;
  }
  if (depth !== 0) throw new Error('unbalanced brackets');
  const start = text.search(/\S/);
  const end = text.trimEnd().length;
  return { text: text.slice(start, end), masked: masked.slice(start, end), top: top.slice(start, end) };
};

/** Column names an expression reads: identifiers not called as functions. */
export const columnsOf = (expression: string): Set<string> =>
  new Set([...expression.matchAll(/\b([A-Za-z_]\w*)\b(?!\s*\()/g)].map((m) => m[1]!));
