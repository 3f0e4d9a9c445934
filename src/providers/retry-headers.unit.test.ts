import { describe, expect, it } from 'vitest';
import { retryDelay } from '../gateway/pipeline.js';
import { RETRY_AFTER_MAX_MS, retryAfterMsOf, upstreamRequestIdOf } from './http.js';

// The retry conventions of the ecosystem: an upstream's Retry-After (OpenAI's retry-after-ms, the
// RFC 9110 forms), backoff with jitter between the gateway's own tries, and the request id each
// provider gives its answer.

describe('retryAfterMsOf', () => {
  it('reads retry-after-ms first, then retry-after as seconds or an HTTP-date', () => {
    expect(retryAfterMsOf({ 'retry-after-ms': '250', 'retry-after': '9' })).toBe(250);
    expect(retryAfterMsOf({ 'retry-after-ms': '12.5' })).toBe(13);
    expect(retryAfterMsOf({ 'retry-after': '3' })).toBe(3_000);
    const now = Date.UTC(2026, 10, 28, 12, 0, 0);
    expect(retryAfterMsOf({ 'retry-after': 'Sat, 28 Nov 2026 12:00:05 GMT' }, now)).toBe(5_000);
    // A date in the past means now.
    expect(retryAfterMsOf({ 'retry-after': 'Sat, 28 Nov 2026 11:00:00 GMT' }, now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const value of ['', 'soon', '-1', '1e3', '3 s'])
      expect(retryAfterMsOf({ 'retry-after': value }), value).toBeUndefined();
    expect(retryAfterMsOf({ 'retry-after-ms': 'x' })).toBeUndefined();
    expect(retryAfterMsOf({})).toBeUndefined();
  });
});

describe('upstreamRequestIdOf', () => {
  it('finds the id under each provider’s header', () => {
    expect(upstreamRequestIdOf({ 'x-request-id': 'req_openai' })).toBe('req_openai');
    expect(upstreamRequestIdOf({ 'request-id': 'req_anthropic' })).toBe('req_anthropic');
    expect(upstreamRequestIdOf({ 'x-amzn-requestid': 'b7e1-aws' })).toBe('b7e1-aws');
    expect(upstreamRequestIdOf({ 'apim-request-id': 'azure-1' })).toBe('azure-1');
    expect(upstreamRequestIdOf({ 'x-request-id': ['first', 'second'] })).toBe('first');
  });

  it('keeps nothing that is not a bounded, printable id', () => {
    expect(upstreamRequestIdOf({ 'x-request-id': 'has space' })).toBeNull();
    expect(upstreamRequestIdOf({ 'x-request-id': 'x'.repeat(129) })).toBeNull();
    expect(upstreamRequestIdOf({ 'x-request-id': 'ok\u0000' })).toBeNull();
    expect(upstreamRequestIdOf({})).toBeNull();
  });
});

describe('retryDelay', () => {
  it('backs off exponentially, with half of each wait random', () => {
    const waits = [0, 1, 2, 3].map((n) => retryDelay(n, 100, undefined, 300_000, () => 0));
    expect(waits).toEqual([50, 100, 200, 400]);
    expect(retryDelay(0, 100, undefined, 300_000, () => 0.999_999)).toBe(100);
    const spread = new Set(Array.from({ length: 50 }, () => retryDelay(2, 100, undefined, 300_000)));
    expect(spread.size).toBeGreaterThan(10);
    for (const w of spread) expect(w).toBeGreaterThanOrEqual(200);
  });

  it('waits what the upstream asked, unless it outlasts a minute or half the time left', () => {
    expect(retryDelay(0, 100, 7_000, 300_000)).toBe(7_000);
    expect(retryDelay(0, 100, RETRY_AFTER_MAX_MS + 1, 300_000)).toBeNull();
    expect(retryDelay(0, 100, 7_000, 10_000)).toBeNull();
    expect(retryDelay(5, 100, undefined, 3_000)).toBeNull();
  });
});
