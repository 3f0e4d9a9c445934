import { addUsd, formatUsd, parseUsd, ZERO_USD } from '../../../lib/money.js';
import type { LedgerLine, WalletReads } from '../../../projections/wallet/reads.js';

export const LEDGER_CSV_COLUMNS = [
  'position',
  'occurred_at',
  'type',
  'id',
  'amount_usd',
  'balance_usd',
  'actor',
  'reference',
  'reason',
] as const;

/**
 * RFC 4180 quoting, and a leading apostrophe on free text that a spreadsheet would run as a
 * formula (=, +, -, @): a grant reason is operator input that ends up opened in Excel.
 */
const cell = (value: string | number | null, freeText = false): string => {
  if (value === null) return '';
  let text = String(value);
  if (freeText && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** The workspace's ledger as CSV lines, page by page, with the running balance after each line. */
export async function* ledgerCsv(
  reads: WalletReads,
  workspaceId: string,
  pageSize = 1_000,
): AsyncGenerator<string> {
  yield `${LEDGER_CSV_COLUMNS.join(',')}\r\n`;
  let after = 0;
  let balance = ZERO_USD;
  for (;;) {
    const page: LedgerLine[] = await reads.ledgerPage(workspaceId, after, pageSize);
    if (page.length === 0) return;
    let chunk = '';
    for (const line of page) {
      balance = addUsd(balance, parseUsd(line.amount_usd));
      chunk += `${[
        cell(line.position),
        cell(line.occurred_at),
        cell(line.kind),
        cell(line.id, true),
        cell(line.amount_usd),
        cell(formatUsd(balance)),
        cell(line.actor, true),
        cell(line.reference, true),
        cell(line.reason, true),
      ].join(',')}\r\n`;
    }
    yield chunk;
    after = page[page.length - 1]!.position;
  }
}
