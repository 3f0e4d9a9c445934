import { describe, expect, it } from 'vitest';
import { notificationConcerns } from './event-store.js';

// Append notifications name their categories (migrations/postgres/0023); a listener that follows
// some categories wakes only for those.
describe('notificationConcerns', () => {
  it('is true for a listener of every category, and for a payload that names none', () => {
    expect(notificationConcerns('12 wallet', undefined)).toBe(true);
    expect(notificationConcerns('12', ['policy'])).toBe(true);
    expect(notificationConcerns(undefined, ['policy'])).toBe(true);
  });

  it('is true when one named category is followed, false when none is', () => {
    expect(notificationConcerns('12 wallet', ['policy'])).toBe(false);
    expect(notificationConcerns('12 wallet,policy', ['policy'])).toBe(true);
    expect(notificationConcerns('12 registry', ['registry', 'policy'])).toBe(true);
    expect(notificationConcerns('12 walletx', ['wallet'])).toBe(false);
  });
});
