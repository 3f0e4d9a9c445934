import { describe, expect, it } from 'vitest';
import { fold } from '../decider.js';
import { centsOf, checkTopUpAmount, usdOfCents } from './amounts.js';
import { walletDecider } from './decider.js';
import type { WalletCommand, WalletEvent } from './events.js';

// The wallet decider, given/when/then (STYLE.md rules 1, 10).

const given = (history: WalletEvent[]) => ({
  when: (cmd: WalletCommand) => walletDecider.decide(cmd, fold(walletDecider, history)),
  state: () => fold(walletDecider, history),
});

const grant = (amount: string, key = 'k1'): WalletEvent => ({
  type: 'GrantCredited',
  data: { transaction_id: `wtx_${key}`, amount_usd: amount, reason: 'r', idempotency_key: key, via: 'http' },
});
const charge = (request: string, charged: string): WalletEvent => ({
  type: 'ChargeSettled',
  data: {
    request_id: request,
    hold_id: request,
    held_usd: '1',
    charged_usd: charged,
    billing_status: 'priced',
  },
});

describe('wallet decider', () => {
  it('a grant credits its exact amount in canonical form', () => {
    expect(
      given([]).when({
        type: 'GrantCredit',
        transactionId: 'wtx_1',
        amountUsd: '10.50',
        reason: 'welcome credit',
        idempotencyKey: 'k',
        via: 'http',
      }),
    ).toEqual([
      {
        type: 'GrantCredited',
        data: {
          transaction_id: 'wtx_1',
          amount_usd: '10.5',
          reason: 'welcome credit',
          idempotency_key: 'k',
          via: 'http',
        },
      },
    ]);
  });

  it('refuses a grant that is not a positive decimal, or has no reason', () => {
    const base = {
      type: 'GrantCredit',
      transactionId: 't',
      reason: 'r',
      idempotencyKey: 'k',
      via: 'http',
    } as const;
    for (const amountUsd of ['0', '-1', '1e3', '10,00', ' 5', 'NaN'])
      expect(() => given([]).when({ ...base, amountUsd })).toThrow(/amount_usd/);
    expect(() => given([]).when({ ...base, amountUsd: '1', reason: ' ' })).toThrow(/reason is required/);
  });

  it('settles the priced total of a wallet request and releases its hold', () => {
    const settle = (funding: 'wallet' | 'byok' | null, billingStatus: 'priced' | 'failed') =>
      given([]).when({
        type: 'SettleCharge',
        requestId: 'req_1',
        holdId: 'req_1',
        heldUsd: '0.0400',
        totalCostUsd: '0.012345678901234567',
        funding,
        billingStatus,
      })[0];
    expect(settle('wallet', 'priced')).toEqual({
      type: 'ChargeSettled',
      data: {
        request_id: 'req_1',
        hold_id: 'req_1',
        held_usd: '0.04',
        charged_usd: '0.012345678901234567',
        billing_status: 'priced',
      },
    });
    // SPEC 7.6 rule 2: billing failed -> served, not charged; the hold still settles (at 0).
    expect(settle('wallet', 'failed')).toMatchObject({ data: { charged_usd: '0', hold_id: 'req_1' } });
    expect(settle('byok', 'priced')).toMatchObject({ data: { charged_usd: '0' } });
    expect(settle(null, 'priced')).toMatchObject({ data: { charged_usd: '0' } });
  });

  it('refuses a negative priced total rather than crediting the wallet', () => {
    expect(() =>
      given([]).when({
        type: 'SettleCharge',
        requestId: 'r',
        holdId: null,
        heldUsd: '0',
        totalCostUsd: '-1',
        funding: 'wallet',
        billingStatus: 'priced',
      }),
    ).toThrow(/must not be negative/);
  });

  it('folds every money movement to the exact balance; holds, settings and reports move nothing', () => {
    const history: WalletEvent[] = [
      grant('100'),
      {
        type: 'TopUpCredited',
        data: {
          transaction_id: 't2',
          topup_id: 'tu',
          provider: 'stripe',
          provider_event_id: 'evt',
          payment_intent_id: 'pi',
          amount_usd: '25.00',
        },
      },
      charge('a', '0.000000000000000001'),
      charge('b', '3.333333333333333333'),
      {
        type: 'RefundIssued',
        data: {
          transaction_id: 't3',
          refund_id: 'rf',
          provider: 'stripe',
          provider_refund_id: 're_1',
          payment_intent_id: 'pi',
          amount_usd: '5',
          hold_id: 'refund:ws:rf',
        },
      },
      { type: 'HoldExpired', data: { hold_id: 'x', held_usd: '9' } },
      { type: 'AutoRefillSettingsSet', data: { enabled: true, trigger_usd: '5', amount_usd: '20' } },
      {
        type: 'TopUpRequested',
        data: { topup_id: 'tu2', provider: 'stripe', payment_intent_id: 'pi2', amount_usd: '7' },
      },
    ];
    const s = given(history).state();
    expect(s.balance).toBe(116_666_666_666_666_666_666n);
    expect(s.credited).toBe(125n * 10n ** 18n);
    expect(s.refunded).toBe(5n * 10n ** 18n);
    expect(s.charged).toBe(3_333_333_333_333_333_334n);
    expect(s.movements).toBe(5);
  });
});

describe('amounts the payment provider takes', () => {
  it('converts whole cents exactly and refuses fractions of a cent', () => {
    expect(centsOf('12.34')).toBe(1234);
    expect(centsOf('12.340000')).toBe(1234);
    expect(usdOfCents(1234)).toBe('12.34');
    expect(() => centsOf('0.001')).toThrow(/whole cents/);
    expect(() => checkTopUpAmount('0.49')).toThrow(/between/);
    expect(checkTopUpAmount('0.50')).toBe(50);
  });
});
