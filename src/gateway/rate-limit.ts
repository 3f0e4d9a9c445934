/**
 * Per-API-key token buckets (SPEC 7.4 Retry-After; SPEC 8 does not show the values): `rpm` requests
 * a minute on average, with bursts of up to ten seconds' worth. In process: each gateway process
 * enforces its own share.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly capacity: number;
  private readonly perMs: number;

  constructor(private readonly rpm: number) {
    this.capacity = Math.max(1, Math.ceil(rpm / 6));
    this.perMs = rpm / 60_000;
  }

  get enabled(): boolean {
    return this.rpm > 0;
  }

  /** null when allowed; otherwise the whole seconds to wait (at least 1, SPEC 7.4). */
  take(key: string, now = Date.now()): number | null {
    if (!this.enabled) return null;
    const b = this.buckets.get(key) ?? { tokens: this.capacity, at: now };
    b.tokens = Math.min(this.capacity, b.tokens + (now - b.at) * this.perMs);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1_000));
  }
}
