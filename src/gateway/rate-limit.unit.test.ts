import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.js';

describe('RateLimiter', () => {
  it('allows a burst of ten seconds worth, then answers whole seconds to wait, at least 1', () => {
    const rl = new RateLimiter(60);
    for (let i = 0; i < 10; i++) expect(rl.take('k', 0)).toBeNull();
    expect(rl.take('k', 0)).toBe(1);
    expect(rl.take('k', 1_000)).toBeNull();
    expect(rl.take('other', 0)).toBeNull();
  });

  it('rounds the wait up', () => {
    const rl = new RateLimiter(6);
    expect(rl.take('k', 0)).toBeNull();
    expect(rl.take('k', 0)).toBe(10);
    expect(rl.take('k', 9_500)).toBe(1);
  });

  it('is off at 0', () => {
    const rl = new RateLimiter(0);
    for (let i = 0; i < 100; i++) expect(rl.take('k')).toBeNull();
  });
});
