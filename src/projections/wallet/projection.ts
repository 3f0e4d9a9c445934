import { WALLET_CATEGORY, type WalletEvent } from '../../commands/wallet/events.js';
import { balanceEffect } from '../../commands/wallet/ledger.js';
import type { StoredEvent } from '../../events/event-store.js';
import { namedStatement, type PoolClient } from '../../events/postgres/pool.js';
import { assertNever } from '../../lib/assert.js';
import { formatUsd } from '../../lib/money.js';
import { clearReadModel, type Projection } from '../projection.js';

const workspaceOf = (streamId: string) => streamId.slice(WALLET_CATEGORY.length + 1);

/** Tables rebuilt from the ledger; holds, webhook deliveries and held_usd are operational state. */
const LEDGER_TABLES = [
  'workspace_wallet_transactions',
  'workspace_wallet_charges',
  'workspace_wallet_topups',
  'workspace_billing_receipts',
  'workspace_wallet_auto_refill',
];

// Each request's settlement runs these two: named, so each is planned once per connection.
const addToBalance = namedStatement(
  'svc_wallet_balance_add',
  `INSERT INTO workspace_wallet_balances (workspace_id, balance_usd) VALUES ($1, $2)
   ON CONFLICT (workspace_id) DO UPDATE
     SET balance_usd = workspace_wallet_balances.balance_usd + EXCLUDED.balance_usd, updated_at = now()`,
);
const releaseHold = namedStatement('svc_wallet_release', 'SELECT svc_wallet_release($1, $2)');

const moveBalance = async (c: PoolClient, workspaceId: string, e: WalletEvent): Promise<void> => {
  const effect = balanceEffect(e);
  if (effect === 0n) return;
  await c.query(addToBalance([workspaceId, formatUsd(effect)]));
};

const release = (c: PoolClient, holdId: string | null, status: 'settled' | 'expired') =>
  holdId === null ? Promise.resolve() : c.query(releaseHold([holdId, status]));

const transaction = (
  c: PoolClient,
  row: {
    id: string;
    workspace: string;
    type: 'topup' | 'grant' | 'refund';
    amount: string;
    actor: string;
    at: string;
    position: number;
    reason?: string;
    idempotencyKey?: string;
    refundId?: string;
    provider?: string;
    paymentIntentId?: string;
    providerEventId?: string;
    providerRefundId?: string;
  },
) =>
  c.query(
    `INSERT INTO workspace_wallet_transactions (transaction_id, workspace_id, type, amount_usd, reason,
       idempotency_key, refund_id, provider, payment_intent_id, provider_event_id, provider_refund_id,
       actor, created_at, position)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      row.id,
      row.workspace,
      row.type,
      row.amount,
      row.reason ?? null,
      row.idempotencyKey ?? null,
      row.refundId ?? null,
      row.provider ?? null,
      row.paymentIntentId ?? null,
      row.providerEventId ?? null,
      row.providerRefundId ?? null,
      row.actor,
      row.at,
      row.position,
    ],
  );

const applyOne = async (c: PoolClient, stored: StoredEvent): Promise<void> => {
  const e = { type: stored.type, data: stored.data } as WalletEvent;
  const ws = workspaceOf(stored.streamId);
  const at = stored.metadata.now ?? stored.recordedAt.toISOString();
  const actor = stored.metadata.actor ?? 'unknown';
  const position = stored.globalPosition;
  await moveBalance(c, ws, e);
  switch (e.type) {
    case 'TopUpRequested':
      await c.query(
        `INSERT INTO workspace_wallet_topups (topup_id, workspace_id, provider, payment_intent_id, amount_usd,
           status, requested_by, created_at)
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7) ON CONFLICT DO NOTHING`,
        [e.data.topup_id, ws, e.data.provider, e.data.payment_intent_id, e.data.amount_usd, actor, at],
      );
      return;
    case 'TopUpCredited': {
      const d = e.data;
      await transaction(c, {
        id: d.transaction_id,
        workspace: ws,
        type: 'topup',
        amount: d.amount_usd,
        actor,
        at,
        position,
        provider: d.provider,
        paymentIntentId: d.payment_intent_id,
        providerEventId: d.provider_event_id,
      });
      // A top-up paid without a pending row (its write was lost after the intent was created) is
      // still credited: the row is created settled.
      await c.query(
        `INSERT INTO workspace_wallet_topups (topup_id, workspace_id, provider, payment_intent_id, amount_usd,
           status, created_at, settled_at, provider_event_id)
         VALUES ($1, $2, $3, $4, $5, 'settled', $6, $6, $7)
         ON CONFLICT (provider, payment_intent_id) DO UPDATE
           SET status = 'settled', settled_at = EXCLUDED.settled_at, provider_event_id = EXCLUDED.provider_event_id`,
        [d.topup_id, ws, d.provider, d.payment_intent_id, d.amount_usd, at, d.provider_event_id],
      );
      await c.query(
        `INSERT INTO workspace_billing_receipts (receipt_id, workspace_id, provider, payment_intent_id,
           provider_event_id, amount_usd, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [d.transaction_id, ws, d.provider, d.payment_intent_id, d.provider_event_id, d.amount_usd, at],
      );
      return;
    }
    case 'GrantCredited':
      await transaction(c, {
        id: e.data.transaction_id,
        workspace: ws,
        type: 'grant',
        amount: e.data.amount_usd,
        actor,
        at,
        position,
        reason: e.data.reason,
        idempotencyKey: e.data.idempotency_key,
      });
      return;
    case 'RefundIssued':
      await transaction(c, {
        id: e.data.transaction_id,
        workspace: ws,
        type: 'refund',
        amount: e.data.amount_usd,
        actor,
        at,
        position,
        refundId: e.data.refund_id,
        provider: e.data.provider,
        paymentIntentId: e.data.payment_intent_id,
        providerRefundId: e.data.provider_refund_id,
      });
      await release(c, e.data.hold_id, 'settled');
      return;
    case 'ChargeSettled':
      await c.query(
        `INSERT INTO workspace_wallet_charges (request_id, workspace_id, charged_usd, held_usd, billing_status,
           settled_at, position)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [e.data.request_id, ws, e.data.charged_usd, e.data.held_usd, e.data.billing_status, at, position],
      );
      await release(c, e.data.hold_id, 'settled');
      return;
    case 'HoldExpired':
      await release(c, e.data.hold_id, 'expired');
      return;
    case 'AutoRefillSettingsSet':
      await c.query(
        `INSERT INTO workspace_wallet_auto_refill (workspace_id, enabled, trigger_usd, amount_usd, updated_by, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (workspace_id) DO UPDATE SET enabled = EXCLUDED.enabled, trigger_usd = EXCLUDED.trigger_usd,
           amount_usd = EXCLUDED.amount_usd, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`,
        [ws, e.data.enabled, e.data.trigger_usd, e.data.amount_usd, actor, at],
      );
      return;
    case 'ReconciliationMismatchFound':
      // Audit only (the relay publishes it); it moves no money and changes no row.
      return;
    default:
      assertNever(e);
  }
};

/**
 * The balance read model of every wallet (SPEC 2.9). A rebuild zeroes balances and replays;
 * escrow state is not reset, and hold releases are keyed on the hold's own status, so replaying a
 * settlement never releases a hold twice.
 */
export const walletProjection: Projection = {
  name: 'wallet',
  version: 1,
  categories: [WALLET_CATEGORY],
  reset: async (client) => {
    await clearReadModel(client, LEDGER_TABLES);
    await client.query('UPDATE workspace_wallet_balances SET balance_usd = 0, updated_at = now()');
  },
  apply: async (client, events) => {
    for (const e of events) await applyOne(client, e);
  },
};
