import { csvLine } from '../../../lib/csv.js';
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

/** The workspace's ledger as CSV lines, page by page, with the running balance after each line. */
export async function* ledgerCsv(
  reads: WalletReads,
  workspaceId: string,
  pageSize = 1_000,
): AsyncGenerator<string> {
  yield csvLine(LEDGER_CSV_COLUMNS);
  let after = 0;
  let balance = ZERO_USD;
  for (;;) {
    const page: LedgerLine[] = await reads.ledgerPage(workspaceId, after, pageSize);
    if (page.length === 0) return;
    let chunk = '';
    for (const line of page) {
      balance = addUsd(balance, parseUsd(line.amount_usd));
      chunk += csvLine([
        line.position,
        line.occurred_at,
        line.kind,
        line.id,
        line.amount_usd,
        formatUsd(balance),
        line.actor,
        line.reference,
        line.reason,
      ]);
    }
    yield chunk;
    after = page[page.length - 1]!.position;
  }
}
