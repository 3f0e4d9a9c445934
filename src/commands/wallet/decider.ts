import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import { formatUsd, tryParseUsd } from '../../lib/money.js';
import type { Decider } from '../decider.js';
import type { WalletCommand, WalletEvent } from './events.js';
import { addToLedger, emptyLedger, type LedgerTotals } from './ledger.js';

/**
 * The wallet aggregate (STYLE.md rules 1-2). Its state is what replay needs: the balance and the
 * totals by kind of movement (ledger.ts). Decisions never read the folded balance: funds are guarded
 * by the escrow hold (one atomic statement on the hot path) and duplicates by deterministic message
 * ids, so a wallet that settles every request of a busy workspace is never loaded to decide one.
 */
export type Wallet = LedgerTotals;

/** A positive amount in canonical form; `param` names the field in the refusal. */
export const positiveUsd = (text: string, param: string): string => {
  const parsed = tryParseUsd(text);
  if (!parsed.ok) throw new ServiceError('bad_request', `${param}: ${parsed.error}`, { param });
  if (parsed.value <= 0n) throw new ServiceError('bad_request', `${param} must be positive`, { param });
  return formatUsd(parsed.value);
};

const nonNegativeUsd = (text: string, param: string): string => {
  const parsed = tryParseUsd(text);
  if (!parsed.ok) throw new ServiceError('bad_request', `${param}: ${parsed.error}`, { param });
  if (parsed.value < 0n) throw new ServiceError('bad_request', `${param} must not be negative`, { param });
  return formatUsd(parsed.value);
};

const required = (value: string, param: string): string => {
  if (value.trim() === '') throw new ServiceError('bad_request', `${param} is required`, { param });
  return value;
};

const decide = (cmd: WalletCommand, _s: Wallet): WalletEvent[] => {
  switch (cmd.type) {
    case 'RequestTopUp':
      return [
        {
          type: 'TopUpRequested',
          data: {
            topup_id: cmd.topupId,
            provider: cmd.provider,
            payment_intent_id: cmd.paymentIntentId,
            amount_usd: positiveUsd(cmd.amountUsd, 'amount_usd'),
          },
        },
      ];
    case 'CreditTopUp':
      return [
        {
          type: 'TopUpCredited',
          data: {
            transaction_id: cmd.transactionId,
            topup_id: cmd.topupId,
            provider: cmd.provider,
            provider_event_id: cmd.providerEventId,
            payment_intent_id: cmd.paymentIntentId,
            amount_usd: positiveUsd(cmd.amountUsd, 'amount_usd'),
          },
        },
      ];
    case 'GrantCredit':
      return [
        {
          type: 'GrantCredited',
          data: {
            transaction_id: cmd.transactionId,
            amount_usd: positiveUsd(cmd.amountUsd, 'amount_usd'),
            reason: required(cmd.reason, 'reason'),
            idempotency_key: required(cmd.idempotencyKey, 'idempotency_key'),
            via: cmd.via,
          },
        },
      ];
    case 'IssueRefund':
      return [
        {
          type: 'RefundIssued',
          data: {
            transaction_id: cmd.transactionId,
            refund_id: required(cmd.refundId, 'refund_id'),
            provider: cmd.provider,
            provider_refund_id: cmd.providerRefundId,
            payment_intent_id: cmd.paymentIntentId,
            amount_usd: positiveUsd(cmd.amountUsd, 'amount_usd'),
            hold_id: cmd.holdId,
          },
        },
      ];
    case 'SettleCharge': {
      // SPEC 7.6 rule 2: a request failing billing is served and not charged; BYOK is never charged.
      const billable = cmd.funding === 'wallet' && cmd.billingStatus === 'priced';
      const charged = billable ? nonNegativeUsd(cmd.totalCostUsd, 'total_cost_usd') : '0';
      return [
        {
          type: 'ChargeSettled',
          data: {
            request_id: cmd.requestId,
            hold_id: cmd.holdId,
            held_usd: nonNegativeUsd(cmd.heldUsd, 'held_usd'),
            charged_usd: charged,
            billing_status: cmd.billingStatus,
          },
        },
      ];
    }
    case 'ExpireHold':
      return [
        {
          type: 'HoldExpired',
          data: { hold_id: cmd.holdId, held_usd: nonNegativeUsd(cmd.heldUsd, 'held_usd') },
        },
      ];
    case 'SetAutoRefill':
      return [
        {
          type: 'AutoRefillSettingsSet',
          data: {
            enabled: cmd.enabled,
            trigger_usd: nonNegativeUsd(cmd.triggerUsd, 'trigger_usd'),
            amount_usd: positiveUsd(cmd.amountUsd, 'amount_usd'),
          },
        },
      ];
    case 'ReportReconciliationMismatch':
      return [
        {
          type: 'ReconciliationMismatchFound',
          data: {
            provider: cmd.provider,
            provider_event_id: cmd.providerEventId,
            payment_intent_id: cmd.paymentIntentId,
            amount_usd: cmd.amountUsd,
            reason: cmd.reason,
          },
        },
      ];
    default:
      return assertNever(cmd);
  }
};

export const walletDecider: Decider<WalletCommand, WalletEvent, Wallet> = {
  initialState: emptyLedger,
  evolve: addToLedger,
  decide,
};
