import { assertNever } from '../../lib/assert.js';
import { addUsd, parseUsd, subUsd, type Usd, ZERO_USD } from '../../lib/money.js';
import type { WalletEvent } from './events.js';

/**
 * What the ledger's events mean in money (SPEC 2.9, 8: one currency, exact decimals):
 * `balance = topups + grants - refunds - charges`. The wallet decider folds a stream with it, the
 * balance projection moves the read model by it, and `svc ledger replay` checks one against the other.
 */
export interface LedgerTotals {
  balance: Usd;
  credited: Usd;
  refunded: Usd;
  charged: Usd;
  movements: number;
}

export const emptyLedger = (): LedgerTotals => ({
  balance: ZERO_USD,
  credited: ZERO_USD,
  refunded: ZERO_USD,
  charged: ZERO_USD,
  movements: 0,
});

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

export const addToLedger = (s: LedgerTotals, e: WalletEvent): LedgerTotals => {
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
