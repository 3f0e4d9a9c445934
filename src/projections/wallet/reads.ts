import type {
  AutoRefillSettings,
  TopUpRow,
  UncreditedPayment,
  UncreditedPayments,
  WalletLedger,
  WalletTransaction,
} from '../../commands/wallet/ports.js';
import { type Pool, type PoolClient, withTransaction } from '../../events/postgres/pool.js';
import { addUsd, formatUsd, parseUsd, subUsd, ZERO_USD } from '../../lib/money.js';

/** numeric(38,18) arrives as text with trailing zeros; the API shows the canonical decimal. */
export const usdText = (value: string | null): string =>
  formatUsd(value === null ? ZERO_USD : parseUsd(value));

export interface WalletBalance {
  workspace_id: string;
  currency: 'USD';
  balance_usd: string;
  held_usd: string;
  available_usd: string;
  /** False until the first credit: holds answer no_wallet. */
  funded: boolean;
}

/** One line of the ledger: a credit or refund transaction, or a request charge. */
export interface LedgerLine {
  position: number;
  occurred_at: string;
  kind: 'topup' | 'grant' | 'refund' | 'charge';
  id: string;
  /** Signed: credits positive, refunds and charges negative. */
  amount_usd: string;
  actor: string | null;
  reference: string | null;
  reason: string | null;
}

const TRANSACTION_COLUMNS = `transaction_id, workspace_id, type, amount_usd, reason, idempotency_key, refund_id,
  provider, payment_intent_id, provider_event_id, provider_refund_id, actor, created_at`;

const toTransaction = (r: WalletTransaction & { created_at: Date | string }): WalletTransaction => ({
  ...r,
  amount_usd: usdText(r.amount_usd),
  created_at: new Date(r.created_at).toISOString(),
});

/**
 * The reader of the wallet read model, beside its writer (projection.ts): balances, transactions,
 * top-ups, auto-refill settings and the ledger export; it answers the wallet commands' questions
 * (WalletLedger) and reconciliation's (UncreditedPayments).
 */
/**
 * The ledger's lines (SPEC 2.9): credits and refunds (refunds negative) beside settled charges
 * (negative), by position, after or before $2, at most $3; the CSV export and the console's pages
 * read the same lines.
 */
const ledgerLines = (side: 'after' | 'before'): string => {
  const [cmp, order] = side === 'after' ? ['>', 'ASC'] : ['<', 'DESC'];
  return `(SELECT position, created_at AS occurred_at, type AS kind, transaction_id AS id,
               CASE WHEN type = 'refund' THEN -amount_usd ELSE amount_usd END AS amount_usd, actor,
               coalesce(payment_intent_id, idempotency_key) AS reference, reason
          FROM workspace_wallet_transactions WHERE workspace_id = $1 AND position ${cmp} $2
         ORDER BY position ${order} LIMIT $3)
       UNION ALL
       (SELECT position, settled_at, 'charge', request_id, -charged_usd, NULL, billing_status, NULL
          FROM workspace_wallet_charges WHERE workspace_id = $1 AND position ${cmp} $2
         ORDER BY position ${order} LIMIT $3)
       ORDER BY position ${order} LIMIT $3`;
};

/** What a page query needs: the pool, or one client inside a transaction. */
type Queryable = Pick<PoolClient, 'query'>;

export class WalletReads implements WalletLedger, UncreditedPayments {
  constructor(private readonly pool: Pool) {}

  async balance(workspaceId: string): Promise<WalletBalance> {
    const { rows } = await this.pool.query<{ balance_usd: string; held_usd: string }>(
      'SELECT balance_usd, held_usd FROM workspace_wallet_balances WHERE workspace_id = $1',
      [workspaceId],
    );
    const row = rows[0];
    const balance = parseUsd(row?.balance_usd ?? '0');
    const held = parseUsd(row?.held_usd ?? '0');
    return {
      workspace_id: workspaceId,
      currency: 'USD',
      balance_usd: formatUsd(balance),
      held_usd: formatUsd(held),
      available_usd: formatUsd(subUsd(balance, held)),
      funded: row !== undefined,
    };
  }

  private async oneTransaction(where: string, values: unknown[]): Promise<WalletTransaction | null> {
    const { rows } = await this.pool.query<WalletTransaction>(
      `SELECT ${TRANSACTION_COLUMNS} FROM workspace_wallet_transactions WHERE ${where}`,
      values,
    );
    return rows[0] ? toTransaction(rows[0]) : null;
  }

  grantByKey(workspaceId: string, idempotencyKey: string) {
    return this.oneTransaction("workspace_id = $1 AND type = 'grant' AND idempotency_key = $2", [
      workspaceId,
      idempotencyKey,
    ]);
  }

  refundById(workspaceId: string, refundId: string) {
    return this.oneTransaction("workspace_id = $1 AND type = 'refund' AND refund_id = $2", [
      workspaceId,
      refundId,
    ]);
  }

  topUpCredit(provider: string, paymentIntentId: string) {
    return this.oneTransaction("type = 'topup' AND provider = $1 AND payment_intent_id = $2", [
      provider,
      paymentIntentId,
    ]);
  }

  async topUpByIntent(provider: string, paymentIntentId: string): Promise<TopUpRow | null> {
    const { rows } = await this.pool.query<TopUpRow & { created_at: Date; settled_at: Date | null }>(
      `SELECT topup_id, workspace_id, provider, payment_intent_id, amount_usd, status, created_at, settled_at
       FROM workspace_wallet_topups WHERE provider = $1 AND payment_intent_id = $2`,
      [provider, paymentIntentId],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      ...r,
      amount_usd: usdText(r.amount_usd),
      created_at: new Date(r.created_at).toISOString(),
      settled_at: r.settled_at ? new Date(r.settled_at).toISOString() : null,
    };
  }

  async refundedOf(paymentIntentId: string): Promise<string> {
    const { rows } = await this.pool.query<{ total: string | null }>(
      "SELECT sum(amount_usd) AS total FROM workspace_wallet_transactions WHERE type = 'refund' AND payment_intent_id = $1",
      [paymentIntentId],
    );
    return usdText(rows[0]?.total ?? null);
  }

  async autoRefill(workspaceId: string): Promise<AutoRefillSettings | null> {
    const { rows } = await this.pool.query<{
      enabled: boolean;
      trigger_usd: string;
      amount_usd: string;
      updated_by: string;
      updated_at: Date;
    }>(
      'SELECT enabled, trigger_usd, amount_usd, updated_by, updated_at FROM workspace_wallet_auto_refill WHERE workspace_id = $1',
      [workspaceId],
    );
    const r = rows[0];
    return r
      ? {
          enabled: r.enabled,
          trigger_usd: usdText(r.trigger_usd),
          amount_usd: usdText(r.amount_usd),
          updated_by: r.updated_by,
          updated_at: r.updated_at.toISOString(),
        }
      : null;
  }

  /** Ledger lines after `afterPosition` in ledger order, for streaming exports. */
  async ledgerPage(workspaceId: string, afterPosition: number, limit: number): Promise<LedgerLine[]> {
    const { rows } = await this.pool.query<{
      position: number;
      occurred_at: Date;
      kind: LedgerLine['kind'];
      id: string;
      amount_usd: string;
      actor: string | null;
      reference: string | null;
      reason: string | null;
    }>(ledgerLines('after'), [workspaceId, afterPosition, limit]);
    return rows.map((r) => ({
      ...r,
      occurred_at: r.occurred_at.toISOString(),
      amount_usd: usdText(r.amount_usd),
    }));
  }

  /**
   * One page of the ledger, newest first, for the console (SPEC 4.6 wallet): the lines
   * before `beforePosition` (null: from the newest), each with the running balance after it, the
   * same figure the CSV export's balance_usd column gives. `has_more` says an older page exists.
   */
  async ledgerPageBefore(
    workspaceId: string,
    beforePosition: number | null,
    limit: number,
  ): Promise<{ data: (LedgerLine & { balance_usd: string })[]; has_more: boolean }> {
    const before = beforePosition ?? Number.MAX_SAFE_INTEGER;
    // The page and the balance ahead of it are read in one snapshot, so a line committed meanwhile
    // cannot make the running balance disagree with the lines shown.
    return withTransaction(this.pool, async (client) => {
      await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
      return this.ledgerPageIn(client, workspaceId, before, limit);
    });
  }

  private async ledgerPageIn(
    client: Queryable,
    workspaceId: string,
    before: number,
    limit: number,
  ): Promise<{ data: (LedgerLine & { balance_usd: string })[]; has_more: boolean }> {
    const { rows } = await client.query<{
      position: string | number;
      occurred_at: Date;
      kind: LedgerLine['kind'];
      id: string;
      amount_usd: string;
      actor: string | null;
      reference: string | null;
      reason: string | null;
    }>(ledgerLines('before'), [workspaceId, before, limit + 1]);
    const page = rows.slice(0, limit);
    const oldest = page.at(-1);
    // The balance before the page's oldest line: every credit, refund and charge ahead of it.
    let running = ZERO_USD;
    if (oldest) {
      const { rows: sums } = await client.query<{ total: string | null }>(
        `SELECT (SELECT coalesce(sum(CASE WHEN type = 'refund' THEN -amount_usd ELSE amount_usd END), 0)
                   FROM workspace_wallet_transactions WHERE workspace_id = $1 AND position < $2)
              - (SELECT coalesce(sum(charged_usd), 0)
                   FROM workspace_wallet_charges WHERE workspace_id = $1 AND position < $2) AS total`,
        [workspaceId, oldest.position],
      );
      running = parseUsd(sums[0]?.total ?? '0');
    }
    const out: (LedgerLine & { balance_usd: string })[] = [];
    for (const r of [...page].reverse()) {
      running = addUsd(running, parseUsd(r.amount_usd));
      out.push({
        ...r,
        position: Number(r.position),
        occurred_at: r.occurred_at.toISOString(),
        amount_usd: usdText(r.amount_usd),
        balance_usd: formatUsd(running),
      });
    }
    return { data: out.reverse(), has_more: rows.length > limit };
  }

  /** The workspace's active escrow holds, newest first: what `held_usd` is made of. */
  async activeHolds(workspaceId: string, limit: number) {
    const { rows } = await this.pool.query<{
      hold_id: string;
      amount_usd: string;
      created_at: Date;
      expires_at: Date;
    }>(
      `SELECT hold_id, amount_usd, created_at, expires_at FROM workspace_wallet_holds
        WHERE workspace_id = $1 AND status = 'active' ORDER BY created_at DESC, hold_id LIMIT $2`,
      [workspaceId, limit + 1],
    );
    return {
      data: rows.slice(0, limit).map((r) => ({
        hold_id: r.hold_id,
        amount_usd: usdText(r.amount_usd),
        created_at: r.created_at.toISOString(),
        expires_at: r.expires_at.toISOString(),
      })),
      has_more: rows.length > limit,
    };
  }

  /** The workspace's top-ups, newest first: pending until the verified webhook credits them. */
  async topUps(workspaceId: string, limit: number) {
    const { rows } = await this.pool.query<{
      topup_id: string;
      provider: string;
      payment_intent_id: string;
      amount_usd: string;
      status: 'pending' | 'settled';
      requested_by: string | null;
      created_at: Date;
      settled_at: Date | null;
    }>(
      `SELECT topup_id, provider, payment_intent_id, amount_usd, status, requested_by, created_at, settled_at
         FROM workspace_wallet_topups WHERE workspace_id = $1 ORDER BY created_at DESC, topup_id LIMIT $2`,
      [workspaceId, limit],
    );
    return rows.map((r) => ({
      ...r,
      amount_usd: usdText(r.amount_usd),
      created_at: r.created_at.toISOString(),
      settled_at: r.settled_at ? r.settled_at.toISOString() : null,
    }));
  }

  /**
   * Succeeded payments (a verified webhook recorded by the write side, or a top-up row marked
   * settled) older than the grace period that no topup transaction credits.
   */
  async uncreditedPayments(now: string, graceSeconds: number): Promise<UncreditedPayment[]> {
    const { rows } = await this.pool.query<UncreditedPayment>(
      `SELECT e.provider, e.provider_event_id, e.payment_intent_id, e.workspace_id, e.amount_usd,
              'webhook' AS source
         FROM workspace_payment_webhook_events e
        WHERE e.event_type = 'payment_intent.succeeded' AND e.payment_intent_id IS NOT NULL
          AND e.received_at <= $1::timestamptz - make_interval(secs => $2)
          AND NOT EXISTS (SELECT 1 FROM workspace_wallet_transactions t
                           WHERE t.type = 'topup' AND t.provider = e.provider
                             AND t.payment_intent_id = e.payment_intent_id)
       UNION ALL
       SELECT u.provider, coalesce(u.provider_event_id, ''), u.payment_intent_id, u.workspace_id, u.amount_usd,
              'topup' AS source
         FROM workspace_wallet_topups u
        WHERE u.status = 'settled'
          AND NOT EXISTS (SELECT 1 FROM workspace_wallet_transactions t
                           WHERE t.type = 'topup' AND t.provider = u.provider
                             AND t.payment_intent_id = u.payment_intent_id)`,
      [now, graceSeconds],
    );
    return rows;
  }
}
