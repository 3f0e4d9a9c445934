/**
 * One CSV cell of an export a person opens in a spreadsheet: RFC 4180 quoting, and a leading
 * apostrophe on text a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a
 * carriage return). Plain numbers are left as numbers (-0.25 is a charge, not a formula). Reporting
 * dimension values, grant reasons and user ids are tenant input, so every cell goes through here.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;
const NEEDS_QUOTES = /[",\r\n]/;

export const csvCell = (value: string | number | null | undefined): string => {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** One CSV line (CRLF-terminated, RFC 4180) of cells. */
export const csvLine = (cells: readonly (string | number | null | undefined)[]): string =>
  `${cells.map(csvCell).join(',')}\r\n`;
