import type { EventStore } from '../../events/event-store.js';
import { formatUsd, parseUsd } from '../../lib/money.js';
import type { WorkspaceDirectory } from '../ports.js';
import { runWalletCommand } from './handler.js';
import type { HoldRecords, UncreditedPayments, WaitForLedger } from './ports.js';

export interface SweepDeps {
  store: EventStore;
  holds: HoldRecords;
  payments: UncreditedPayments;
  workspaces: WorkspaceDirectory;
  /** The expiry sweep releases holds through the ledger: it waits until the projection applied them. */
  waitForLedger: WaitForLedger;
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
  const expired = await deps.holds.expired(now, options.limit ?? 1_000);
  let last = 0;
  for (const h of expired) {
    const r = await runWalletCommand(
      deps.store,
      h.workspaceId,
      { type: 'ExpireHold', holdId: h.holdId, heldUsd: formatUsd(parseUsd(h.amountUsd)) },
      {
        commandId: `wallet:expire:${h.holdId}`,
        actor: 'job:wallet_expire_holds',
        now,
        tenantId: h.workspaceId,
      },
    );
    last = Math.max(last, r.position);
  }
  if (last > 0) await deps.waitForLedger(last);
  await deps.holds.purgeClosed(now, CLOSED_HOLD_RETENTION_DAYS);
  return expired.length;
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
  const rows = await deps.payments.uncreditedPayments(now, options.graceSeconds);
  const seen = new Set<string>();
  const found: Mismatch[] = [];
  for (const r of rows) {
    const key = `${r.provider}:${r.payment_intent_id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const known = r.workspace_id !== null && (await deps.workspaces.exists(r.workspace_id));
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
