import { call } from './outside.js';

/**
 * Whole listings read from outside, page by page: every request row of an organization through
 * the query API (SPEC 4.5: total and has_more), and every line of a workspace's wallet ledger
 * through its JSON pages. Counting duplicates needs the whole list, not its first page.
 */

export interface RequestRow {
  request_id: string;
  status: string;
  http_status: number;
  billing_status: string;
  total_cost_usd: string;
  [column: string]: unknown;
}

const PAGE = 500;

/** Every request row of `orgId`; throws when a page fails or the pages disagree with the total. */
export const allRequestRows = async (
  baseUrl: string,
  token: string,
  orgId: string,
): Promise<RequestRow[]> => {
  const rows: RequestRow[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const r = await call(baseUrl, 'GET', `/api/requests?org_id=${orgId}&limit=${PAGE}&offset=${offset}`, {
      token,
    });
    if (r.status !== 200) throw new Error(`GET /api/requests: ${r.status} ${r.text.slice(0, 300)}`);
    const page = r.json as { data: RequestRow[]; total: number; has_more: boolean };
    rows.push(...page.data);
    if (!page.has_more) {
      if (rows.length !== page.total)
        throw new Error(`GET /api/requests listed ${rows.length} rows of a total of ${page.total}`);
      return rows;
    }
  }
};

/** One line of the wallet ledger (kind charge: `id` is the request id, `amount_usd` negative). */
export interface LedgerLine {
  position: number;
  kind: 'topup' | 'grant' | 'refund' | 'charge';
  id: string;
  amount_usd: string;
  reference: string | null;
}

/** Every line of a workspace's ledger, newest first. */
export const allLedgerLines = async (
  baseUrl: string,
  token: string,
  workspaceId: string,
): Promise<LedgerLine[]> => {
  const lines: LedgerLine[] = [];
  let before: number | null = null;
  for (;;) {
    const r = await call(
      baseUrl,
      'GET',
      `/api/workspaces/${workspaceId}/wallet/transactions?limit=200${before === null ? '' : `&before=${before}`}`,
      { token },
    );
    if (r.status !== 200) throw new Error(`GET wallet transactions: ${r.status} ${r.text.slice(0, 300)}`);
    const page = r.json as { data: LedgerLine[]; has_more: boolean; next_before: number | null };
    lines.push(...page.data);
    if (!page.has_more || page.next_before === null) return lines;
    before = page.next_before;
  }
};

/** The ids that occur more than once. */
export const repeated = (ids: readonly string[]): string[] => {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const id of ids) (seen.has(id) ? twice : seen).add(id);
  return [...twice];
};
