import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import { addUsd, formatUsd, parseUsd, subUsd, tryParseUsd, type Usd, ZERO_USD } from '../../lib/money.js';
import type { Decider } from '../decider.js';
import type { WalletCommand, WalletEvent } from './events.js';

/**
 * The wallet aggregate (STYLE.md rules 1-2). Its state is what replay needs: the balance and the
 * totals by kind of movement. Decisions never read the folded balance: funds are guarded by the
 * escrow hold (one atomic statement on the hot path) and duplicates by deterministic message ids,
 * so a wallet that settles every request of a busy workspace is never loaded to decide one.
 */
export interface Wallet {
  balance: Usd;
  credited: Usd;
  refunded: Usd;
  charged: Usd;
  movements: number;
}

const initialState = (): Wallet => ({
  balance: ZERO_USD,
  credited: ZERO_USD,
  refunded: ZERO_USD,
  charged: ZERO_USD,
  movements: 0,
});

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

/** The signed effect of one event on the balance; zero for events that move no money. */
export const balanceEffect = (e: WalletEvent): Usd => {
  switch (e.type) {
    case 'TopUpCredited':
    case 'GrantCredited':
      return parseUsd(e.data.amount_usd);
    case 'RefundIssued':
      return subUsd(ZERO_USD, parseUsd(e.data.amount_usd));
    case 'ChargeSettled':
      return subUsd(ZERO_USD, parseUsd(e.data.charged_usd));
    case 'TopUpRequested':
    case 'HoldExpired':
    case 'AutoRefillSettingsSet':
    case 'ReconciliationMismatchFound':
      return ZERO_USD;
    default:
      return assertNever(e);
  }
};

const evolve = (s: Wallet, e: WalletEvent): Wallet => {
  const effect = balanceEffect(e);
  if (effect === ZERO_USD) return s;
  const next = { ...s, balance: addUsd(s.balance, effect), movements: s.movements + 1 };
  switch (e.type) {
    case 'TopUpCredited':
    case 'GrantCredited':
      return { ...next, credited: addUsd(s.credited, effect) };
    case 'RefundIssued':
      return { ...next, refunded: subUsd(s.refunded, effect) };
    case 'ChargeSettled':
      return { ...next, charged: subUsd(s.charged, effect) };
    default:
      return next;
  }
};

export const walletDecider: Decider<WalletCommand, WalletEvent, Wallet> = { initialState, evolve, decide };
