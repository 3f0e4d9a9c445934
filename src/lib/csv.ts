/**
 * The one CSV writer (RFC 4180) of every export and every file the service writes.
 *
 * - `csvCell` / `csvLine`: a cell of an export a person opens in a spreadsheet (the finance and
 *   activity panels, query exports, the ledger): RFC 4180 quoting, and a leading apostrophe on text
 *   a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a carriage return).
 *   Plain numbers are left as numbers (-0.25 is a charge, not a formula). Reporting dimension
 *   values, grant reasons, user ids and the names of orgs, projects and keys are tenant input, so
 *   every cell goes through here. Lines end in CRLF.
 * - `csvDataLine`: a line of a file the service itself reads back (the registry's catalog and
 *   rates files): the same quoting and no guard, so every value round-trips byte for byte.
 */
type CsvValue = string | number | boolean | null | undefined;

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;
const NEEDS_QUOTES = /[",\r\n]/;

const quoted = (text: string): string => (NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

export const csvCell = (value: CsvValue): string => {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return quoted(FORMULA_START.test(text) && !PLAIN_NUMBER.test(text) ? `'${text}` : text);
};

/** One CSV line (CRLF-terminated, RFC 4180) of cells. */
export const csvLine = (cells: readonly CsvValue[]): string => `${cells.map(csvCell).join(',')}\r\n`;

/** One line of a machine-read CSV file: quoting only, values kept as they are, LF-terminated. */
export const csvDataLine = (cells: readonly CsvValue[]): string =>
  `${cells.map((v) => (v === null || v === undefined ? '' : quoted(String(v)))).join(',')}\n`;
