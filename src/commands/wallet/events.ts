/**
 * The wallet ledger of one workspace, stream `wallet-<workspace_id>` (SPEC 2.9, 3). Every money
 * movement is one of these events, so folding the stream reproduces the balance to the last digit.
 * Amounts are exact decimal strings in USD (SPEC 8: one currency), as `formatUsd` writes them.
 */

export const WALLET_CATEGORY = 'wallet';
export const walletStream = (workspaceId: string) => `${WALLET_CATEGORY}-${workspaceId}`;

export type BillingOutcome = 'priced' | 'failed';

export type WalletEvent =
  /** A payment intent was created for a top-up: the pending row, no money yet. */
  | {
      type: 'TopUpRequested';
      data: { topup_id: string; provider: string; payment_intent_id: string; amount_usd: string };
    }
  | {
      type: 'TopUpCredited';
      data: {
        transaction_id: string;
        topup_id: string;
        provider: string;
        provider_event_id: string;
        payment_intent_id: string;
        amount_usd: string;
      };
    }
  | {
      type: 'GrantCredited';
      data: {
        transaction_id: string;
        amount_usd: string;
        reason: string;
        idempotency_key: string;
        /** How the administrator asked: http or cli. */
        via: string;
      };
    }
  | {
      type: 'RefundIssued';
      data: {
        transaction_id: string;
        refund_id: string;
        provider: string;
        provider_refund_id: string;
        payment_intent_id: string;
        amount_usd: string;
        /** The escrow hold that reserved the refunded funds while the provider answered. */
        hold_id: string;
      };
    }
  | {
      type: 'ChargeSettled';
      data: {
        request_id: string;
        /** The hold this settlement releases; null when the request held nothing. */
        hold_id: string | null;
        held_usd: string;
        charged_usd: string;
        billing_status: BillingOutcome;
      };
    }
  | { type: 'HoldExpired'; data: { hold_id: string; held_usd: string } }
  | {
      type: 'AutoRefillSettingsSet';
      data: { enabled: boolean; trigger_usd: string; amount_usd: string };
    }
  | {
      type: 'ReconciliationMismatchFound';
      data: {
        provider: string;
        provider_event_id: string;
        payment_intent_id: string;
        amount_usd: string | null;
        reason: string;
      };
    };

export type WalletCommand =
  | { type: 'RequestTopUp'; topupId: string; provider: string; paymentIntentId: string; amountUsd: string }
  | {
      type: 'CreditTopUp';
      transactionId: string;
      topupId: string;
      provider: string;
      providerEventId: string;
      paymentIntentId: string;
      amountUsd: string;
    }
  | {
      type: 'GrantCredit';
      transactionId: string;
      amountUsd: string;
      reason: string;
      idempotencyKey: string;
      via: string;
    }
  | {
      type: 'IssueRefund';
      transactionId: string;
      refundId: string;
      provider: string;
      providerRefundId: string;
      paymentIntentId: string;
      amountUsd: string;
      holdId: string;
    }
  | {
      type: 'SettleCharge';
      requestId: string;
      holdId: string | null;
      heldUsd: string;
      /** The envelope's total_cost_usd. */
      totalCostUsd: string;
      funding: 'wallet' | 'byok' | null;
      billingStatus: BillingOutcome;
    }
  | { type: 'ExpireHold'; holdId: string; heldUsd: string }
  | { type: 'SetAutoRefill'; enabled: boolean; triggerUsd: string; amountUsd: string }
  | {
      type: 'ReportReconciliationMismatch';
      provider: string;
      providerEventId: string;
      paymentIntentId: string;
      amountUsd: string | null;
      reason: string;
    };
