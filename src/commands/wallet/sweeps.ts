import type { EventStore } from '../../events/event-store.js';
import type { Pool } from '../../events/postgres/pool.js';
import { formatUsd, parseUsd } from '../../lib/money.js';
import { catchUp } from '../../projections/runner.js';
import { walletProjection } from '../../projections/wallet/projection.js';
import { runWalletCommand } from './handler.js';

export interface SweepDeps {
  pool: Pool;
  store: EventStore;
  now?: () => Date;
}

/** Closed holds are kept this long for inspection, then deleted by the sweep. */
const CLOSED_HOLD_RETENTION_DAYS = 7;

/**
 * Expires holds whose settlement never came (a gateway crash, a lost envelope): each becomes a
 * HoldExpired on the ledger, which the projection turns into a release. A settlement arriving
 * later still charges; it just finds no active hold to release.
 */
export const expireHolds = async (deps: SweepDeps, options: { limit?: number } = {}): Promise<number> => {
  const now = (deps.now?.() ?? new Date()).toISOString();
  const { rows } = await deps.pool.query<{ hold_id: string; workspace_id: string; amount_usd: string }>(
    `SELECT hold_id, workspace_id, amount_usd FROM workspace_wallet_holds
     WHERE status = 'active' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [now, options.limit ?? 1_000],
  );
  let last = 0;
  for (const h of rows) {
    const r = await runWalletCommand(
      deps.store,
      h.workspace_id,
      { type: 'ExpireHold', holdId: h.hold_id, heldUsd: formatUsd(parseUsd(h.amount_usd)) },
      {
        commandId: `wallet:expire:${h.hold_id}`,
        actor: 'job:wallet_expire_holds',
        now,
        tenantId: h.workspace_id,
      },
    );
    last = Math.max(last, r.position);
  }
  if (last > 0) await catchUp(deps.pool, walletProjection, last);
  await deps.pool.query(
    `DELETE FROM workspace_wallet_holds WHERE status <> 'active'
     AND closed_at < $1::timestamptz - make_interval(days => $2)`,
    [now, CLOSED_HOLD_RETENTION_DAYS],
  );
  return rows.length;
};

export interface Mismatch {
  provider: string;
  provider_event_id: string;
  payment_intent_id: string;
  workspace_id: string | null;
  amount_usd: string | null;
  reason: string;
}

/**
 * SPEC 3 reconciliation row: a succeeded payment (verified webhook recorded, or a top-up row
 * marked settled) older than the grace period with no topup transaction crediting it is reported
 * as wallet.reconciliation.mismatch, once per payment intent. Payments no workspace can be named
 * for are reported on the platform's audit trail.
 */
export const reconcileTopUps = async (
  deps: SweepDeps,
  options: { graceSeconds: number },
): Promise<Mismatch[]> => {
  const now = (deps.now?.() ?? new Date()).toISOString();
  const { rows } = await deps.pool.query<Omit<Mismatch, 'reason'> & { source: string }>(
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
    [now, options.graceSeconds],
  );
  const seen = new Set<string>();
  const found: Mismatch[] = [];
  for (const r of rows) {
    const key = `${r.provider}:${r.payment_intent_id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const known = r.workspace_id !== null && (await workspaceExists(deps.pool, r.workspace_id));
    const reason =
      r.source === 'topup'
        ? 'top-up marked settled without a topup transaction'
        : known
          ? 'payment succeeded but the wallet was not credited'
          : 'payment succeeded for no known workspace';
    const amount = r.amount_usd === null ? null : formatUsd(parseUsd(r.amount_usd));
    const workspace = known ? (r.workspace_id as string) : 'platform';
    await runWalletCommand(
      deps.store,
      workspace,
      {
        type: 'ReportReconciliationMismatch',
        provider: r.provider,
        providerEventId: r.provider_event_id,
        paymentIntentId: r.payment_intent_id,
        amountUsd: amount,
        reason,
      },
      {
        commandId: `wallet:mismatch:${key}`,
        actor: 'job:wallet_reconcile',
        now,
        ...(known ? { tenantId: workspace } : {}),
      },
    );
    found.push({
      provider: r.provider,
      provider_event_id: r.provider_event_id,
      payment_intent_id: r.payment_intent_id,
      workspace_id: r.workspace_id,
      amount_usd: amount,
      reason,
    });
  }
  return found;
};

const workspaceExists = async (pool: Pool, workspaceId: string): Promise<boolean> =>
  ((await pool.query('SELECT 1 FROM rm_workspaces WHERE workspace_id = $1', [workspaceId])).rowCount ?? 0) >
  0;
