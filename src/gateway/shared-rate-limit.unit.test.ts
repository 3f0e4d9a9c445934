import { describe, expect, it } from 'vitest';
import { leaseCap, nextLeaseSize, retryAfterSeconds, slotOf, WINDOW_SLOTS } from './shared-rate-limit.js';

describe('slots', () => {
  it('are whole seconds of the clock', () => {
    expect(slotOf(0)).toBe(0);
    expect(slotOf(999)).toBe(0);
    expect(slotOf(1_000)).toBe(1);
    expect(slotOf(1_800_000_059_999)).toBe(1_800_000_059);
  });

  it('an admission counts its own slot and the 60 before it', () => {
    expect(WINDOW_SLOTS).toBe(61);
  });
});

describe('Retry-After (SPEC 7.4: whole seconds, rounded up, at least 1)', () => {
  it('is the time until the freeing slot has left the window, rounded up', () => {
    // Slot 100 is counted up to slot 160; at 110.5 s a retry passes from 161 s on.
    expect(retryAfterSeconds(100, 110_500)).toBe(51);
    expect(retryAfterSeconds(100, 110_000)).toBe(51);
    expect(retryAfterSeconds(100, 160_999)).toBe(1);
    expect(retryAfterSeconds(100, 160_000)).toBe(1);
    expect(retryAfterSeconds(100, 100_000)).toBe(61);
  });

  it('is at least one second, and a whole window when the freeing slot is unknown', () => {
    expect(retryAfterSeconds(100, 161_000)).toBe(1);
    expect(retryAfterSeconds(100, 500_000)).toBe(1);
    expect(retryAfterSeconds(null, 0)).toBe(61);
  });
});

describe('leases', () => {
  it('are one admission below the lease threshold, else N/100 up to the largest lease', () => {
    expect(leaseCap(20, 100, 100)).toBe(1);
    // A token limit is checked at each reservation: no batches under it, whatever the request limit.
    expect(leaseCap(null, 100, 100, 30)).toBe(1);
    expect(leaseCap(10_000, 100, 100, 30)).toBe(1);
    expect(leaseCap(99, 100, 100)).toBe(1);
    expect(leaseCap(100, 100, 100)).toBe(1);
    expect(leaseCap(500, 100, 100)).toBe(5);
    expect(leaseCap(1_000_000, 100, 100)).toBe(100);
    expect(leaseCap(null, 100, 64)).toBe(64);
  });

  it('double while used up, shrink to what was used, stay within 1 .. cap', () => {
    expect(nextLeaseSize(1, 1, 10)).toBe(2);
    expect(nextLeaseSize(8, 8, 10)).toBe(10);
    expect(nextLeaseSize(10, 3, 10)).toBe(4);
    expect(nextLeaseSize(10, 0, 10)).toBe(1);
  });
});
