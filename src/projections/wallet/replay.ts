import { type WalletEvent, walletStream } from '../../commands/wallet/events.js';
import { addToLedger, emptyLedger, type LedgerTotals } from '../../commands/wallet/ledger.js';
import type { Pool } from '../../events/postgres/pool.js';
import { compareUsd, formatUsd, parseUsd, type Usd, ZERO_USD } from '../../lib/money.js';
import { catchUp } from '../runner.js';
import { walletProjection } from './projection.js';

/** One disagreement between the ledger and what another store says about it. */
export interface LedgerDifference {
  /** balance, held, transaction, charge, analytics_charge */
  kind: string;
  id: string;
  /** What the ledger says (null: the ledger has no such entry). */
  expected: string | null;
  /** What the other store says (null: it has no such row). */
  actual: string | null;
  detail: string;
}

export interface LedgerReplay {
  workspace_id: string;
  events: number;
  position: number;
  balance_usd: string;
  credited_usd: string;
  refunded_usd: string;
  charged_usd: string;
  read_model_balance_usd: string | null;
  /** request id -> what was charged, for comparing with analytics cost lines. */
  charges: Map<string, { charged: Usd; billing: string }>;
  differences: LedgerDifference[];
}

interface EventRow {
  stream_version: number;
  global_position: number;
  type: string;
  data: unknown;
}

const money = (text: string | null): Usd | null => (text === null ? null : parseUsd(text));
const show = (v: Usd | null): string | null => (v === null ? null : formatUsd(v));

/** Compares entry maps in both directions; `label` names the kind in each difference. */
const diffEntries = (
  kind: string,
  ledger: Map<string, { amount: Usd; type: string }>,
  readModel: Map<string, { amount: Usd; type: string }>,
  out: LedgerDifference[],
): void => {
  for (const [id, want] of ledger) {
    const got = readModel.get(id);
    if (!got)
      out.push({
        kind,
        id,
        expected: formatUsd(want.amount),
        actual: null,
        detail: `${kind} missing from the read model`,
      });
    else if (compareUsd(want.amount, got.amount) !== 0 || want.type !== got.type)
      out.push({
        kind,
        id,
        expected: `${want.type} ${formatUsd(want.amount)}`,
        actual: `${got.type} ${formatUsd(got.amount)}`,
        detail: `${kind} row differs from its ledger event`,
      });
  }
  for (const [id, got] of readModel)
    if (!ledger.has(id))
      out.push({
        kind,
        id,
        expected: null,
        actual: formatUsd(got.amount),
        detail: `${kind} row has no ledger event`,
      });
};

/**
 * `svc ledger replay` (ARCHITECTURE.md "The event store": finance replays a wallet ledger): folds
 * the workspace's ledger from its first event with the ledger totals the wallet decider folds with
 * (commands/wallet/ledger.ts), then compares the result with the read model row by row (balance, held
 * funds against active holds, every transaction and charge). The read model is first brought to
 * the stream's head so a lagging projector is never reported as a difference.
 */
export const replayLedger = async (
  pool: Pool,
  workspaceId: string,
  options: { pageSize?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<LedgerReplay> => {
  const stream = walletStream(workspaceId);
  const pageSize = options.pageSize ?? 5_000;
  const { rows: head } = await pool.query<{ n: number; p: number | null }>(
    'SELECT count(*)::bigint AS n, max(global_position) AS p FROM svc_events WHERE stream_id = $1',
    [stream],
  );
  const total = head[0]?.n ?? 0;
  const position = head[0]?.p ?? 0;
  if (position > 0) await catchUp(pool, walletProjection, position);

  let state: LedgerTotals = emptyLedger();
  const transactions = new Map<string, { amount: Usd; type: string }>();
  const charges = new Map<string, { charged: Usd; billing: string }>();
  let version = 0;
  let done = 0;
  options.onProgress?.(0, total);
  for (;;) {
    const { rows } = await pool.query<EventRow>(
      `SELECT stream_version, global_position, type, data FROM svc_events
       WHERE stream_id = $1 AND stream_version > $2 ORDER BY stream_version LIMIT $3`,
      [stream, version, pageSize],
    );
    if (rows.length === 0) break;
    for (const row of rows) {
      const e = { type: row.type, data: row.data } as WalletEvent;
      state = addToLedger(state, e);
      if (e.type === 'TopUpCredited' || e.type === 'GrantCredited' || e.type === 'RefundIssued') {
        const type = e.type === 'TopUpCredited' ? 'topup' : e.type === 'GrantCredited' ? 'grant' : 'refund';
        transactions.set(e.data.transaction_id, { amount: parseUsd(e.data.amount_usd), type });
      } else if (e.type === 'ChargeSettled')
        charges.set(e.data.request_id, {
          charged: parseUsd(e.data.charged_usd),
          billing: e.data.billing_status,
        });
    }
    version = rows[rows.length - 1]!.stream_version;
    done += rows.length;
    options.onProgress?.(done, total);
  }

  const differences: LedgerDifference[] = [];
  const [balanceRow, activeHolds, txRows, chargeRows] = await Promise.all([
    pool.query<{ balance_usd: string; held_usd: string }>(
      'SELECT balance_usd, held_usd FROM workspace_wallet_balances WHERE workspace_id = $1',
      [workspaceId],
    ),
    pool.query<{ total: string | null }>(
      "SELECT sum(amount_usd) AS total FROM workspace_wallet_holds WHERE workspace_id = $1 AND status = 'active'",
      [workspaceId],
    ),
    pool.query<{ transaction_id: string; type: string; amount_usd: string }>(
      'SELECT transaction_id, type, amount_usd FROM workspace_wallet_transactions WHERE workspace_id = $1',
      [workspaceId],
    ),
    pool.query<{ request_id: string; charged_usd: string }>(
      'SELECT request_id, charged_usd FROM workspace_wallet_charges WHERE workspace_id = $1',
      [workspaceId],
    ),
  ]);
  const row = balanceRow.rows[0];
  const readBalance = money(row?.balance_usd ?? null);
  if (readBalance === null ? state.movements > 0 : compareUsd(readBalance, state.balance) !== 0)
    differences.push({
      kind: 'balance',
      id: workspaceId,
      expected: formatUsd(state.balance),
      actual: show(readBalance),
      detail: 'read-model balance differs from the ledger',
    });
  const held = money(row?.held_usd ?? null) ?? ZERO_USD;
  const holds = money(activeHolds.rows[0]?.total ?? null) ?? ZERO_USD;
  if (compareUsd(held, holds) !== 0)
    differences.push({
      kind: 'held',
      id: workspaceId,
      expected: formatUsd(holds),
      actual: formatUsd(held),
      detail: 'held funds differ from the sum of active holds',
    });
  diffEntries(
    'transaction',
    transactions,
    new Map(txRows.rows.map((r) => [r.transaction_id, { amount: parseUsd(r.amount_usd), type: r.type }])),
    differences,
  );
  diffEntries(
    'charge',
    new Map([...charges].map(([id, c]) => [id, { amount: c.charged, type: 'charge' }])),
    new Map(chargeRows.rows.map((r) => [r.request_id, { amount: parseUsd(r.charged_usd), type: 'charge' }])),
    differences,
  );
  return {
    workspace_id: workspaceId,
    events: done,
    position,
    balance_usd: formatUsd(state.balance),
    credited_usd: formatUsd(state.credited),
    refunded_usd: formatUsd(state.refunded),
    charged_usd: formatUsd(state.charged),
    read_model_balance_usd: show(readBalance),
    charges,
    differences,
  };
};
