import { describe, expect, it } from 'vitest';
import { type BillingHealthThresholds, breaches, evaluateBillingHealth } from './billing-health.js';

// SPEC 3 quarantine row and SPEC 8 defaults: 10 failures and 100 bps (1%), action allow disables.
const defaults: BillingHealthThresholds = {
  minFailures: 10,
  minRatioBps: 100,
  action: 'quarantine',
  windowMinutes: 60,
};
const o = (failed: number, priced: number) => ({ lane: 'openai', model: 'm', failed, priced });

describe('billing-health thresholds', () => {
  it.each([
    [10, 990, true], // exactly 10 failures and exactly 1% of 1000
    [9, 0, false], // under the count, whatever the ratio
    [10, 991, false], // 10 / 1001 is under 1%
    [11, 1089, true], // 11 / 1100 = 1%
    [500, 0, true],
    [0, 0, false],
  ])('%i failed, %i priced -> %s', (failed, priced, expected) => {
    expect(breaches(o(failed, priced), defaults)).toBe(expected);
  });

  it('action allow quarantines nothing', () => {
    expect(evaluateBillingHealth([o(1000, 0)], { ...defaults, action: 'allow' })).toEqual([]);
    expect(evaluateBillingHealth([o(1000, 0), o(1, 0)], defaults)).toEqual([o(1000, 0)]);
  });
});
