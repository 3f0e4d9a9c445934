import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { createPool, type Pool } from '../events/postgres/pool.js';
import { type KeyRateLimits, SharedRateLimiter, type SharedRateLimiterOptions } from './shared-rate-limit.js';

// Per-key rate limits shared by several gateway processes on one real PostgreSQL (SPEC 7.4
// Retry-After): each instance has its own pool, as separate processes would.

let db: TestDatabase;
let otherPool: Pool;
const limiters: SharedRateLimiter[] = [];

/** The start of a calendar minute, so tests can place requests around minute boundaries. */
const MINUTE = 1_800_000_000_000;
let keySeq = 0;
const newKey = (name: string) => `key_${name}_${++keySeq}_${Math.random().toString(36).slice(2, 8)}`;

const clockAt = (ms: number) => {
  const clock = { ms, now: () => clock.ms };
  return clock;
};

const limiter = (pool: Pool, clock: { now: () => number }, options: SharedRateLimiterOptions = {}) => {
  // A generous timeout: a loaded test machine must not turn a slow reservation into a fail-open.
  const l = new SharedRateLimiter(pool, {
    now: clock.now,
    timeoutMs: 30_000,
    sweepIntervalMs: 0,
    flushIntervalMs: 50,
    ...options,
  });
  limiters.push(l);
  return l;
};

/** A pool that counts the queries it is asked, and can be made to fail or hang. */
const wrapped = (inner: Pool) => {
  const w = {
    queries: 0,
    mode: 'ok' as 'ok' | 'fail' | 'hang',
    onQuery: () => {},
    pool: {
      query: (...args: unknown[]) => {
        w.queries++;
        w.onQuery();
        if (w.mode === 'fail') return Promise.reject(new Error('connection refused (test)'));
        if (w.mode === 'hang') return new Promise(() => {});
        return (inner.query as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    } as unknown as Pool,
  };
  return w;
};

const counted = async (apiKeyId: string) => {
  const { rows } = await db.pool.query<{ requests: number; tokens: number }>(
    `SELECT coalesce(sum(requests), 0)::bigint AS requests, coalesce(sum(tokens), 0)::bigint AS tokens
       FROM rate_limit_slots WHERE api_key_id = $1`,
    [apiKeyId],
  );
  return rows[0]!;
};

const rpm = (n: number): KeyRateLimits => ({ requestsPerMinute: n, tokensPerMinute: null });

const admitted = (results: readonly unknown[]) => results.filter((r) => r === null).length;

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 10 });
  otherPool = createPool(db.url, { max: 10, application: 'svc-test-other' });
});
afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await otherPool?.end();
  await db?.drop();
});

describe('across processes', () => {
  // 3 is below the 20 connections of the two pools: every first statement races every other one.
  it.each([3, 20])('300 concurrent admissions for N=%i over two instances admit exactly N', async (n) => {
    const clock = clockAt(MINUTE + 30_500);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey(`n${n}`);
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? a : b).admit(key, rpm(n))),
    );
    expect(admitted(results)).toBe(n);
    for (const r of results.filter((r) => r !== null)) {
      // Admitted in second 30 of the minute, now half a second into it: room again after 60.5 s, rounded up.
      expect(r).toEqual({ limit: 'requests_per_minute', value: n, retryAfterSeconds: 61 });
    }
    expect((await counted(key)).requests).toBe(n);
  });

  it('1,200 concurrent admissions for N=500 admit exactly 500, in far fewer round trips (leases)', async () => {
    const clock = clockAt(MINUTE + 10_250);
    const wa = wrapped(db.pool);
    const wb = wrapped(otherPool);
    const a = limiter(wa.pool, clock);
    const b = limiter(wb.pool, clock);
    const key = newKey('n500');
    const results = await Promise.all(
      Array.from({ length: 1_200 }, (_, i) => (i % 2 === 0 ? a : b).admit(key, rpm(500))),
    );
    expect(admitted(results)).toBe(500);
    await Promise.all([a.close(), b.close()]);
    expect((await counted(key)).requests).toBe(500);
    // One round trip per admission would be 1,200; leases of up to 5 need about 100, plus a refusal each.
    expect(wa.queries + wb.queries).toBeLessThan(300);
  });

  it('an instance closing gives its unused lease back, and the other instance can use it', async () => {
    const clock = clockAt(MINUTE + 5_000);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey('lease');
    const limits = rpm(1_000); // leases of up to 10
    // Sequential admissions on `a` grow its lease 1, 2, 4, 8 (all used), then lease 10 and use 1.
    for (let i = 0; i < 16; i++) expect(await a.admit(key, limits)).toBeNull();
    expect((await counted(key)).requests).toBe(25);
    const fill = await Promise.all(Array.from({ length: 1_000 }, () => b.admit(key, limits)));
    expect(admitted(fill)).toBe(975);

    await a.close();
    await a.close();
    expect((await counted(key)).requests).toBe(991);
    clock.ms += 1_000; // b remembers its refusal until the end of the second
    const more = await Promise.all(Array.from({ length: 20 }, () => b.admit(key, limits)));
    expect(admitted(more)).toBe(9);
  });

  it('a lease ends with its second: what is left goes back to the slot it was counted in', async () => {
    const clock = clockAt(MINUTE + 12_000);
    const a = limiter(db.pool, clock);
    const key = newKey('expiry');
    for (let i = 0; i < 16; i++) expect(await a.admit(key, rpm(1_000))).toBeNull(); // leases 1, 2, 4, 8, 10
    clock.ms += 1_000;
    expect(await a.admit(key, rpm(1_000))).toBeNull(); // 9 unused go back; 1 of 10 used: the next lease is 2
    const slots = async () =>
      (
        await db.pool.query<{ slot: number; requests: number }>(
          'SELECT slot, requests FROM rate_limit_slots WHERE api_key_id = $1 ORDER BY slot',
          [key],
        )
      ).rows;
    await vi.waitFor(async () =>
      expect(await slots()).toEqual([
        { slot: (MINUTE + 12_000) / 1_000, requests: 16 },
        { slot: (MINUTE + 13_000) / 1_000, requests: 2 },
      ]),
    );
  });

  it('keys are independent', async () => {
    const clock = clockAt(MINUTE + 1_000);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const one = newKey('one');
    const two = newKey('two');
    expect(admitted(await Promise.all(Array.from({ length: 10 }, () => a.admit(one, rpm(3)))))).toBe(3);
    expect(await b.admit(one, rpm(3))).toMatchObject({ limit: 'requests_per_minute', value: 3 });
    expect(admitted(await Promise.all(Array.from({ length: 10 }, () => b.admit(two, rpm(3)))))).toBe(3);
  });
});

describe('the window slides', () => {
  it('admits again 61 s later, and never more than N in a rolling minute across a calendar-minute boundary', async () => {
    const clock = clockAt(MINUTE + 59_500);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey('slide');
    expect(admitted(await Promise.all(Array.from({ length: 8 }, () => a.admit(key, rpm(5)))))).toBe(5);
    clock.ms = MINUTE + 60_500; // a new calendar minute, one second later: a fixed window would admit 5 more
    expect(await b.admit(key, rpm(5))).toEqual({
      limit: 'requests_per_minute',
      value: 5,
      retryAfterSeconds: 60,
    });
    clock.ms = MINUTE + 59_500 + 60_000;
    expect(await b.admit(key, rpm(5))).toMatchObject({ retryAfterSeconds: 1 });
    clock.ms = MINUTE + 59_500 + 61_000;
    expect(admitted(await Promise.all(Array.from({ length: 8 }, () => b.admit(key, rpm(5)))))).toBe(5);
  });

  it('slides out in the order requests came in', async () => {
    const clock = clockAt(MINUTE + 30_000);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey('order');
    for (let i = 0; i < 3; i++) expect(await a.admit(key, rpm(5))).toBeNull();
    clock.ms = MINUTE + 59_000;
    for (let i = 0; i < 2; i++) expect(await b.admit(key, rpm(5))).toBeNull();
    clock.ms = MINUTE + 61_000; // the next calendar minute
    expect(await a.admit(key, rpm(5))).toMatchObject({ retryAfterSeconds: 30 });
    clock.ms = MINUTE + 91_000; // the three of second 30 have left; the two of second 59 have not
    const results = await Promise.all(Array.from({ length: 6 }, () => b.admit(key, rpm(5))));
    expect(admitted(results)).toBe(3);
    expect(results.find((r) => r !== null)).toEqual({
      limit: 'requests_per_minute',
      value: 5,
      retryAfterSeconds: 29,
    });
  });

  it('Retry-After is the whole seconds until a retry passes: one second less is still refused', async () => {
    const clock = clockAt(MINUTE + 1_500);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey('retry');
    expect(admitted(await Promise.all(Array.from({ length: 25 }, () => a.admit(key, rpm(20)))))).toBe(20);
    clock.ms += 10_000;
    const refused = await b.admit(key, rpm(20));
    expect(refused).toEqual({ limit: 'requests_per_minute', value: 20, retryAfterSeconds: 51 });
    const at = clock.ms;
    clock.ms = at + 50_000;
    expect(await b.admit(key, rpm(20))).toMatchObject({ retryAfterSeconds: 1 });
    clock.ms = at + 50_499;
    expect(await a.admit(key, rpm(20))).toMatchObject({ retryAfterSeconds: 1 });
    clock.ms = at + 51_000;
    expect(await b.admit(key, rpm(20))).toBeNull();
  });
});

describe('tokens per minute', () => {
  const limits: KeyRateLimits = { requestsPerMinute: null, tokensPerMinute: 1_000 };

  it('spent tokens at the limit refuse the next admission on any instance until they slide out', async () => {
    const clock = clockAt(MINUTE + 2_000);
    const a = limiter(db.pool, clock);
    const b = limiter(otherPool, clock);
    const key = newKey('tokens');
    expect(await a.admit(key, limits)).toBeNull();
    a.spend(key, 600);
    clock.ms += 1_000;
    a.spend(key, 400);
    await a.close(); // flushes
    expect(await counted(key)).toEqual({ requests: 1, tokens: 1_000 });
    clock.ms += 1_000;
    // 600 tokens of second 2 must leave for the count to drop below 1,000: at second 63.
    expect(await b.admit(key, limits)).toEqual({
      limit: 'tokens_per_minute',
      value: 1_000,
      retryAfterSeconds: 59,
    });
    expect(await b.admit(key, { requestsPerMinute: 100, tokensPerMinute: 1_000 })).toMatchObject({
      limit: 'tokens_per_minute',
    });
    clock.ms = MINUTE + 63_000;
    expect(await b.admit(key, limits)).toBeNull();
  });

  it('spends are flushed in the background', async () => {
    const clock = clockAt(MINUTE + 3_000);
    const a = limiter(db.pool, clock, { flushIntervalMs: 20 });
    const key = newKey('flush');
    expect(await a.admit(key, limits)).toBeNull();
    a.spend(key, 1_500);
    await vi.waitFor(async () => expect((await counted(key)).tokens).toBe(1_500));
    clock.ms += 1_000;
    expect(await a.admit(key, limits)).toMatchObject({ limit: 'tokens_per_minute', value: 1_000 });
  });

  it('one client at a time under a token limit alone stops as soon as the written tokens reach it', async () => {
    // No leases under a token limit: each admission sees the tokens written so far (a batch of
    // leased admissions let a client far past a small budget within one second).
    const clock = clockAt(MINUTE + 4_000);
    const a = limiter(db.pool, clock, { flushIntervalMs: 60_000 });
    const key = newKey('sequential');
    const budget: KeyRateLimits = { requestsPerMinute: null, tokensPerMinute: 30 };
    let served = 0;
    for (let i = 0; i < 20; i++) {
      if ((await a.admit(key, budget)) !== null) break;
      served++;
      a.spend(key, 15);
      // The reply's tokens are written before the client's next request arrives.
      await vi.waitFor(async () => expect((await counted(key)).tokens).toBe(15 * served));
    }
    expect(served).toBe(2);
  });
});

describe('round trips', () => {
  it('makes no query when both limits are null', async () => {
    const w = wrapped(db.pool);
    const a = limiter(w.pool, clockAt(MINUTE));
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        a.admit(newKey('free'), { requestsPerMinute: null, tokensPerMinute: null }),
      ),
    );
    expect(admitted(results)).toBe(100);
    await a.close();
    expect(w.queries).toBe(0);
  });

  it('a reservation answered in a later second moves to that second in one step, never counted twice', async () => {
    const clock = clockAt(MINUTE + 7_900);
    const w = wrapped(db.pool);
    let first = true;
    w.onQuery = () => {
      if (first) clock.ms += 200; // the reply arrives in the next second
      first = false;
    };
    // No background flush: the move must not wait for one. At a limit of 1, a request counted in
    // both seconds at once would be refused against its own count (found by CI under load).
    const a = limiter(w.pool, clock, { flushIntervalMs: 60_000 });
    const key = newKey('straddle');
    expect(await a.admit(key, rpm(1))).toBeNull();
    expect(w.queries).toBe(2);
    const slots = async () =>
      (
        await db.pool.query<{ slot: number; requests: number }>(
          'SELECT slot, requests FROM rate_limit_slots WHERE api_key_id = $1 ORDER BY slot',
          [key],
        )
      ).rows;
    const moved = [
      { slot: (MINUTE + 7_000) / 1_000, requests: 0 },
      { slot: (MINUTE + 8_000) / 1_000, requests: 1 },
    ];
    expect(await slots()).toEqual(moved);
    expect(await a.admit(key, rpm(1))).toMatchObject({ limit: 'requests_per_minute', value: 1 });
    await a.close();
    expect(await slots()).toEqual(moved);
  });

  it('a move whose reservation fails is given back by the next flush instead', async () => {
    const clock = clockAt(MINUTE + 9_900);
    const w = wrapped(db.pool);
    let n = 0;
    w.onQuery = () => {
      n++;
      if (n === 1) clock.ms += 200; // the first reply arrives in the next second
      if (n === 2) w.mode = 'fail'; // and the reservation that moves it fails
    };
    const a = limiter(w.pool, clock, { flushIntervalMs: 60_000, onError: () => {} });
    const key = newKey('straddle-fail');
    expect(await a.admit(key, rpm(1))).toBeNull(); // admitted open
    w.mode = 'ok';
    await a.close();
    expect(await counted(key)).toEqual({ requests: 0, tokens: 0 });
  });

  it('sweeps slots older than two windows, and only those', async () => {
    const key = newKey('sweep');
    // Before every other test's slots: the sweep deletes old rows of every key.
    const now = MINUTE - 1_000_000;
    const slot = now / 1_000;
    await db.pool.query(
      `INSERT INTO rate_limit_slots (api_key_id, slot, requests)
       SELECT $1, s, 1 FROM generate_series($2::bigint, $3::bigint) AS s`,
      [key, slot - 200, slot],
    );
    const a = limiter(db.pool, clockAt(now), { sweepIntervalMs: 10 });
    await vi.waitFor(async () => expect((await counted(key)).requests).toBe(123));
    await a.close();
    const { rows } = await db.pool.query<{ oldest: number }>(
      'SELECT min(slot) AS oldest FROM rate_limit_slots WHERE api_key_id = $1',
      [key],
    );
    expect(rows[0]!.oldest).toBe(slot - 122);
  });
});

describe('fail mode: open', () => {
  it('a closed pool: every admission passes and onError hears of it once', async () => {
    const pool = createPool(db.url);
    await pool.end();
    const onError = vi.fn();
    const clock = clockAt(MINUTE);
    const a = limiter(pool, clock, { onError });
    const key = newKey('closed');
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all(Array.from({ length: 20 }, () => a.admit(key, rpm(2))));
      expect(admitted(results)).toBe(20);
      clock.ms += 5_000; // past the pause: each round probes the database again
    }
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError.mock.calls[0]![0]).toBeInstanceOf(Error);
    await a.close();
  });

  it('a dropped database: admissions pass, onError hears once', async () => {
    const gone = await createTestDatabase({ migrate: false });
    await gone.drop();
    const pool = createPool(gone.url);
    const onError = vi.fn();
    const clock = clockAt(MINUTE);
    const a = limiter(pool, clock, { onError });
    for (let i = 0; i < 3; i++) {
      expect(await a.admit(newKey('gone'), rpm(1))).toBeNull();
      clock.ms += 5_000;
    }
    expect(onError).toHaveBeenCalledTimes(1);
    await a.close();
    await pool.end();
  });

  it('enforcement resumes when the database answers again; a new outage is reported again', async () => {
    const w = wrapped(db.pool);
    const onError = vi.fn();
    const clock = clockAt(MINUTE + 20_000);
    const a = limiter(w.pool, clock, { onError, pauseAfterErrorMs: 1_000 });
    const key = newKey('recover');
    w.mode = 'fail';
    expect(admitted(await Promise.all(Array.from({ length: 10 }, () => a.admit(key, rpm(2)))))).toBe(10);
    const during = w.queries;
    // Within the pause no request waits on the database.
    expect(admitted(await Promise.all(Array.from({ length: 10 }, () => a.admit(key, rpm(2)))))).toBe(10);
    expect(w.queries).toBe(during);
    w.mode = 'ok';
    clock.ms += 1_000;
    expect(await a.admit(key, rpm(2))).toBeNull(); // the probe, counted
    const results = await Promise.all(Array.from({ length: 5 }, () => a.admit(key, rpm(2))));
    expect(admitted(results)).toBe(1);
    expect((await counted(key)).requests).toBe(2);
    expect(onError).toHaveBeenCalledTimes(1);
    w.mode = 'fail';
    clock.ms += 1_000;
    expect(await a.admit(key, rpm(2))).toBeNull();
    expect(onError).toHaveBeenCalledTimes(2);
  });

  it('a database that does not answer: the admission passes after timeoutMs and is reported', async () => {
    const w = wrapped(db.pool);
    w.mode = 'hang';
    const onError = vi.fn();
    const a = limiter(w.pool, clockAt(MINUTE), { onError, timeoutMs: 50 });
    expect(await a.admit(newKey('hang'), rpm(1))).toBeNull();
    expect(onError).toHaveBeenCalledTimes(1);
    expect((onError.mock.calls[0]![0] as Error).cause).toBeInstanceOf(Error);
  });
});
