import type { AnalyticsStore } from '../analytics/port.js';
import { compareUsd, formatUsd, parseUsd, type Usd } from '../lib/money.js';
import type { LedgerDifference } from '../projections/wallet/replay.js';

export type AnalyticsComparison =
  | { status: 'compared'; table: string; requests: number; differences: LedgerDifference[] }
  | { status: 'skipped'; note: string; differences: [] };

interface CostTable {
  table: string;
  amount: string;
}

/**
 * The analytics cost-line table, found by shape rather than by name: ingest owns that schema, so a
 * table whose name mentions cost and that has request_id, workspace_id and an amount column is the
 * one (any ClickHouse table written by the ingest consumer).
 */
const findCostTable = async (store: AnalyticsStore): Promise<CostTable | null> => {
  const rows = await store.query<{ table: string; columns: string[] }>(
    `SELECT table, groupArray(name) AS columns FROM system.columns
     WHERE database = {db:String} AND positionCaseInsensitive(table, 'cost') > 0
     GROUP BY table ORDER BY table`,
    { db: store.database },
  );
  for (const r of rows) {
    const amount = ['amount_usd', 'amount', 'cost_usd'].find((c) => r.columns.includes(c));
    if (amount && r.columns.includes('request_id') && r.columns.includes('workspace_id'))
      return { table: r.table, amount };
  }
  return null;
};

/**
 * Compares each priced charge on the ledger with the sum of the request's analytics cost lines.
 * Skipped, with the reason, when no analytics store or no cost-line table is available.
 */
export const compareWithAnalytics = async (
  store: AnalyticsStore | null,
  workspaceId: string,
  charges: Map<string, { charged: Usd; billing: string }>,
): Promise<AnalyticsComparison> => {
  if (!store) return { status: 'skipped', note: 'no analytics store was opened', differences: [] };
  const found = await findCostTable(store);
  if (!found)
    return {
      status: 'skipped',
      note: 'analytics has no cost-line table yet (the ingest consumer creates it)',
      differences: [],
    };
  const sql = (final: string) =>
    `SELECT request_id, toString(sum(toDecimal128(toString(\`${found.amount}\`), 18))) AS total
     FROM \`${found.table}\` ${final} WHERE workspace_id = {ws:String} GROUP BY request_id`;
  // FINAL collapses redelivered rows of a ReplacingMergeTree; other engines refuse it.
  const rows = await store
    .query<{ request_id: string; total: string }>(sql('FINAL'), { ws: workspaceId })
    .catch(() => store.query<{ request_id: string; total: string }>(sql(''), { ws: workspaceId }));
  const analytics = new Map(rows.map((r) => [r.request_id, parseUsd(r.total)]));
  const differences: LedgerDifference[] = [];
  for (const [requestId, c] of charges) {
    if (c.billing !== 'priced' || c.charged === 0n) continue;
    const lines = analytics.get(requestId);
    if (lines === undefined || compareUsd(lines, c.charged) !== 0)
      differences.push({
        kind: 'analytics_charge',
        id: requestId,
        expected: formatUsd(c.charged),
        actual: lines === undefined ? null : formatUsd(lines),
        detail:
          lines === undefined
            ? 'charged on the ledger but analytics has no cost lines'
            : 'analytics cost lines sum differently',
      });
  }
  return { status: 'compared', table: found.table, requests: analytics.size, differences };
};
