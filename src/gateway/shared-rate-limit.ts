import type pg from 'pg';
import type { Pool } from '../events/postgres/pool.js';

/**
 * Per-API-key request and token rate limits shared by every gateway process on one PostgreSQL
 * (migrations/postgres/0017_rate_limit_slots.sql; SPEC 7.4 Retry-After). The policy service decides
 * a key's limits per request; this module enforces them. The in-process `RateLimiter` of
 * rate-limit.ts is a different, per-process guard.
 *
 * Window. "N per minute" means: in any rolling 60-second interval, at most N requests of the key
 * are admitted, over all processes together. Counts live in per-second slots (a row per key and
 * second of the process clock); an admission in slot s counts slots s-60 .. s, so a request is
 * remembered for 60 to 61 s and Retry-After may be up to one second longer than a perfect sliding
 * log would say, never shorter. Every admission happens inside the second it is counted in (a lease
 * ends with its second; a reservation answered in a later second is given back and asked again),
 * which is what makes "any rolling 60 s" hold, not just "any calendar minute". Check and increment
 * are one database function under a per-key transaction advisory lock: no lost updates. Slots
 * follow each process's clock, so hosts are expected to be NTP-synced: a skew shifts where one
 * host's seconds fall in another's window by that much (slots ahead of a clock are counted too).
 *
 * Leases. For limits of `leaseFrom` (100) a minute and more, one round trip reserves a batch of
 * admissions (counted in the current slot at once, so the total can never exceed N) that this
 * process then hands out locally until the second ends; what is left is given back by decrementing
 * that same slot. The batch starts at 1 per key and doubles while it is used up, up to N/100 and
 * `maxLease`, so an idle key holds nothing and a busy one makes about one round trip per second.
 * Below `leaseFrom` every admission is its own round trip and processes share the limit exactly.
 * Concurrent admissions of one key in one process wait for one reservation rather than each
 * sending their own. Capacity leased and not yet given back counts as used, so near the limit one
 * process may be refused for up to a second plus a flush while another holds a lease of at most
 * N/100: conservative, never over.
 *
 * Refusals. A refusal is remembered until the end of its second (the window cannot slide sooner;
 * only another process giving a lease back could make room, and that is seen the next second), so
 * a key hammering over its limit costs one round trip per second per process.
 *
 * Tokens. Admission is refused while the key's tokens counted in the window are at or above
 * `tokensPerMinute`. Tokens are known only after the reply: `spend` counts them in the slot of the
 * reply and written at once (while a write is under way, with the next one). Under a token limit
 * no admissions are leased: each is its own reservation, which sees the tokens written so far.
 * Requests in flight, and those admitted while a reply's tokens are being written, overshoot the
 * token limit by what they use.
 *
 * Fail mode: open. A database error or a reservation slower than `timeoutMs` admits the request.
 * `onError` hears of a problem once, not per request: once when admission starts failing, once
 * when the spend flush does, once when the sweep does, and again only after that operation has
 * succeeded in between. After a failed reservation, admissions skip the database for
 * `pauseAfterErrorMs` (no request waits on a dead database), then one probe goes through while
 * the rest pass; when it answers, enforcement resumes. Pending spends and give-backs are kept and
 * retried (those whose second has left the window are dropped: they no longer matter). The
 * limiter guards fairness and upstream quotas, not money (the escrow hold fails closed), so a
 * database outage must not become a gateway outage.
 *
 * Housekeeping. Every process sweeps rows two windows old (a margin for clock skew between hosts)
 * every `sweepIntervalMs` (jittered), in batches with SKIP LOCKED: no global lock, and concurrent
 * sweepers share the work. Timers are unref'd; close() stops them, gives back unused leases and
 * flushes, and is idempotent. After close, admissions still work one round trip each, without
 * leases, and a spend is written at once.
 */

export interface KeyRateLimits {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

export interface RateLimitRefusal {
  retryAfterSeconds: number;
  limit: 'requests_per_minute' | 'tokens_per_minute';
  /** The limit's value, as given in the key's limits. */
  value: number;
}

export interface SharedRateLimiterOptions {
  /** Milliseconds since the epoch; slots follow this clock. */
  now?: () => number;
  onError?: (err: unknown) => void;
  /** Request limits (per minute) from which admissions are leased in batches; below, one at a time. */
  leaseFrom?: number;
  /** The largest batch one reservation may lease. */
  maxLease?: number;
  /** How often spends and give-backs are written. */
  flushIntervalMs?: number;
  /** How often this process sweeps old slots; 0 turns the sweep off. */
  sweepIntervalMs?: number;
  /** A reservation slower than this admits (fail open). */
  timeoutMs?: number;
  /** After a failed reservation, admissions skip the database this long. */
  pauseAfterErrorMs?: number;
}

/** Slots counted by an admission: its own and the 60 before it. */
export const WINDOW_SLOTS = 61;
/** Rows older than this many slots are swept (a window plus a margin for clock skew). */
export const SWEEP_AFTER_SLOTS = 2 * WINDOW_SLOTS;
const SWEEP_BATCH = 5_000;
const MAX_SWEEP_BATCHES = 20;
/** A reservation answered in a later second is asked again at most this many times. */
const MAX_ATTEMPTS = 3;

export const slotOf = (ms: number): number => Math.floor(ms / 1_000);

/**
 * Whole seconds until slot `freeSlot` has left the window (SPEC 7.4: rounded up, at least 1).
 * Unknown (null): a whole window.
 */
export const retryAfterSeconds = (freeSlot: number | null, nowMs: number): number =>
  freeSlot === null
    ? WINDOW_SLOTS
    : Math.max(1, Math.ceil(((freeSlot + WINDOW_SLOTS) * 1_000 - nowMs) / 1_000));

/**
 * The largest lease for a key's limits: 1 under a token limit (a lease is handed out without
 * looking at tokens, so a batch would let a burst far past the token budget) or below `leaseFrom`
 * requests a minute, else N/100 up to `maxLease`.
 */
export const leaseCap = (
  requestsPerMinute: number | null,
  leaseFrom: number,
  maxLease: number,
  tokensPerMinute: number | null = null,
): number => {
  if (tokensPerMinute !== null) return 1;
  if (requestsPerMinute === null) return Math.max(1, maxLease);
  if (requestsPerMinute < leaseFrom) return 1;
  return Math.max(1, Math.min(maxLease, Math.floor(requestsPerMinute / 100)));
};

/** The next lease size: double a batch that was used up, else what was used plus one. */
export const nextLeaseSize = (size: number, taken: number, cap: number): number =>
  Math.max(1, Math.min(cap, taken >= size ? size * 2 : taken + 1));

type Limit = RateLimitRefusal['limit'];
type Operation = 'admit' | 'flush' | 'sweep';

type Outcome =
  | { kind: 'granted'; slot: number; granted: number }
  | { kind: 'refused'; slot: number; limit: Limit; freeSlot: number | null }
  | { kind: 'failed' };

interface KeyState {
  /** The limits the lease and refusal were obtained under. */
  signature: string;
  /** The slot the lease is counted in. */
  slot: number;
  size: number;
  left: number;
  taken: number;
  nextSize: number;
  reserving: Promise<unknown> | null;
  refusal: { slot: number; limit: Limit; freeSlot: number | null } | null;
}

/** Admissions counted in `slot` to take off it under the next reservation's lock. */
interface Move {
  slot: number;
  count: number;
}

interface Pending {
  requests: number;
  tokens: number;
}

interface AdmitRow {
  granted: number;
  refused_by: Limit | null;
  free_slot: number | string | null;
}

// Named statements are parsed and planned once per connection.
const ADMIT = {
  name: 'svc_rate_limit_admit',
  text: 'SELECT granted, refused_by, free_slot FROM svc_rate_limit_admit($1, $2, $3, $4, $5, $6, $7)',
};
const APPLY = {
  name: 'svc_rate_limit_apply',
  text: 'SELECT svc_rate_limit_apply($1::text[], $2::bigint[], $3::integer[], $4::bigint[])',
};
const SWEEP = {
  name: 'svc_rate_limit_sweep',
  text: `DELETE FROM rate_limit_slots WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM rate_limit_slots WHERE slot < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`,
};

class TimedOut extends Error {}

const FAILURE: Record<Operation, string> = {
  admit: 'shared rate limit: admission failed; admitting without limits until the database answers',
  flush: 'shared rate limit: writing spent tokens and unused leases failed; kept for the next flush',
  sweep: 'shared rate limit: sweeping old slots failed',
};

export class SharedRateLimiter {
  private readonly now: () => number;
  private readonly leaseFrom: number;
  private readonly maxLease: number;
  private readonly timeoutMs: number;
  private readonly pauseAfterErrorMs: number;
  private readonly keys = new Map<string, KeyState>();
  private pending = new Map<string, Map<number, Pending>>();
  private readonly reservations = new Set<Promise<unknown>>();
  private readonly flushTimer: NodeJS.Timeout;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private flushing: Promise<void> | null = null;
  /** Operations failing now; each is reported once when it starts failing. */
  private readonly failing = new Set<Operation>();
  private pausedUntil = Number.NEGATIVE_INFINITY;
  private probing = false;
  private closed = false;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly options: SharedRateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.leaseFrom = options.leaseFrom ?? 100;
    this.maxLease = options.maxLease ?? 100;
    this.timeoutMs = options.timeoutMs ?? 1_000;
    this.pauseAfterErrorMs = options.pauseAfterErrorMs ?? 1_000;
    this.flushTimer = setInterval(() => this.tick(), options.flushIntervalMs ?? 200);
    this.flushTimer.unref();
    this.scheduleSweep(options.sweepIntervalMs ?? 30_000);
  }

  /** null: admitted (and counted). A refusal names the limit and the whole seconds until a retry can pass (>= 1). */
  async admit(apiKeyId: string, limits: KeyRateLimits): Promise<RateLimitRefusal | null> {
    const rpm = limits.requestsPerMinute === null ? null : Math.floor(limits.requestsPerMinute);
    const tpm = limits.tokensPerMinute === null ? null : Math.floor(limits.tokensPerMinute);
    if (rpm === null && tpm === null) return null;
    // A limit of 0 admits nothing, ever: no need to ask.
    if (rpm !== null && rpm <= 0) return refusal('requests_per_minute', limits, null, this.now());
    if (tpm !== null && tpm <= 0) return refusal('tokens_per_minute', limits, null, this.now());
    const signature = `${rpm}/${tpm}`;
    const cap = this.closed ? 1 : leaseCap(rpm, this.leaseFrom, this.maxLease, tpm);
    // A batch granted in a second that had ended by its answer: moved by the next reservation.
    let moving: Move | null = null;
    const settle = <T>(answer: T): T => {
      if (moving) this.giveBack(apiKeyId, moving.slot, moving.count);
      moving = null;
      return answer;
    };
    for (let attempt = 1; ; ) {
      const now = this.now();
      const slot = slotOf(now);
      if (this.failing.has('admit') && (now < this.pausedUntil || this.probing)) return settle(null);
      const state = this.stateOf(apiKeyId, signature, slot);
      if (state.left > 0) {
        state.left--;
        state.taken++;
        return settle(null);
      }
      const refused = state.refusal;
      if (refused && refused.slot === slot)
        return settle(refusal(refused.limit, limits, refused.freeSlot, now));
      if (cap > 1 && state.reserving) {
        await state.reserving;
        continue;
      }

      this.retire(apiKeyId, state); // used up: sizes the next lease
      const want = Math.min(cap, state.nextSize);
      const reservation = this.reserve(apiKeyId, slot, want, rpm, tpm, moving);
      moving = null;
      if (cap > 1) state.reserving = reservation;
      let outcome: Outcome;
      try {
        outcome = await reservation;
      } finally {
        if (state.reserving === reservation) state.reserving = null;
      }

      if (outcome.kind === 'failed') return null;
      const current = this.now();
      const isCurrent =
        this.keys.get(apiKeyId) === state && state.signature === signature && state.slot === outcome.slot;
      if (outcome.kind === 'refused') {
        if (isCurrent)
          state.refusal = { slot: outcome.slot, limit: outcome.limit, freeSlot: outcome.freeSlot };
        return refusal(outcome.limit, limits, outcome.freeSlot, current);
      }
      if (slotOf(current) !== outcome.slot && attempt < MAX_ATTEMPTS) {
        // Admitting now would count this request a second early; the next reservation moves the
        // batch to the second it asks in (one step, so the request is never counted twice).
        moving = { slot: outcome.slot, count: outcome.granted };
        attempt++;
        continue;
      }
      if (cap > 1 && isCurrent && state.left === 0 && !this.closed) {
        this.retire(apiKeyId, state);
        state.size = outcome.granted;
        state.left = outcome.granted - 1;
        state.taken = 1;
      } else if (outcome.granted > 1) {
        this.giveBack(apiKeyId, outcome.slot, outcome.granted - 1);
      }
      return null;
    }
  }

  /**
   * After the reply: the tokens the request used, counted against tokensPerMinute (batched, off the
   * request path). A caller may skip keys without a token limit; their count then starts when one is set.
   */
  spend(apiKeyId: string, tokens: number): void {
    const n = Math.floor(tokens);
    if (!Number.isFinite(n) || n <= 0) return;
    this.queue(apiKeyId, slotOf(this.now()), { requests: 0, tokens: n });
    // Written at once, not at the next tick: the key's next reservation should see these tokens.
    if (!this.closed && !this.flushing) void this.flush();
  }

  /** Flushes pending spends and gives back unused leased capacity; idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.flushTimer);
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    // Reservations in flight may still grant leases. A hung connection must not hang shutdown:
    // each wait is bounded by timeoutMs, and what is not written by then is lost (fail open).
    await this.within(Promise.allSettled([...this.reservations, this.sweeping]));
    for (const [apiKeyId, state] of this.keys) this.retire(apiKeyId, state);
    this.keys.clear();
    await this.within(this.flush());
  }

  private async within(work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.timeoutMs);
      timer.unref();
    });
    await Promise.race([work, deadline]);
    clearTimeout(timer);
  }

  /** The key's state for these limits and this second; a lease of another second or other limits is given back. */
  private stateOf(apiKeyId: string, signature: string, slot: number): KeyState {
    let state = this.keys.get(apiKeyId);
    if (!state) {
      state = {
        signature,
        slot,
        size: 0,
        left: 0,
        taken: 0,
        nextSize: 1,
        reserving: null,
        refusal: null,
      };
      this.keys.set(apiKeyId, state);
    } else if (state.signature !== signature || state.slot !== slot) {
      this.retire(apiKeyId, state);
      if (state.signature !== signature) state.nextSize = 1;
      state.signature = signature;
      state.slot = slot;
      state.refusal = null;
    }
    return state;
  }

  /** Ends the key's lease: what is left goes back, and the next lease is sized by what was used. */
  private retire(apiKeyId: string, state: KeyState): void {
    if (state.size > 0) {
      if (state.left > 0) this.giveBack(apiKeyId, state.slot, state.left);
      state.nextSize = nextLeaseSize(state.size, state.taken, this.maxLease);
    }
    state.size = 0;
    state.left = 0;
    state.taken = 0;
  }

  /** One round trip, bounded by timeoutMs; never rejects. */
  private reserve(
    apiKeyId: string,
    slot: number,
    want: number,
    rpm: number | null,
    tpm: number | null,
    moving: Move | null,
  ): Promise<Outcome> {
    // Not moved (the transaction did not commit): given back by the next flush instead.
    const unmoved = () => {
      if (moving) this.giveBack(apiKeyId, moving.slot, moving.count);
    };
    const probe = this.failing.has('admit');
    if (probe) this.probing = true;
    // A pool that throws instead of rejecting (ended, misconfigured) fails the same way.
    const query = new Promise<pg.QueryResult<AdmitRow>>((resolve) =>
      resolve(
        this.pool.query<AdmitRow>({
          ...ADMIT,
          values: [apiKeyId, slot, want, rpm, tpm, moving?.slot ?? null, moving?.count ?? 0],
        }),
      ),
    ).then(({ rows }): Outcome => {
      const row = rows[0]!;
      // Number(): a pool not made by createPool returns BIGINT as a string.
      if (row.refused_by === null) return { kind: 'granted', slot, granted: Number(row.granted) };
      const freeSlot = row.free_slot === null ? null : Number(row.free_slot);
      return { kind: 'refused', slot, limit: row.refused_by, freeSlot };
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new TimedOut(`rate limit reservation took over ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      timer.unref();
    });
    const outcome = Promise.race([query, deadline])
      .then((o) => {
        this.succeeded('admit');
        return o;
      })
      .catch((err: unknown): Outcome => {
        this.failed('admit', err);
        if (err instanceof TimedOut) {
          // The request was admitted open; if the reservation lands after all, it counts that one.
          query.then((late) => {
            if (late.kind === 'granted' && late.granted > 1) this.giveBack(apiKeyId, slot, late.granted - 1);
          }, unmoved);
        } else unmoved();
        return { kind: 'failed' };
      })
      .finally(() => {
        clearTimeout(timer);
        if (probe) this.probing = false;
        this.reservations.delete(outcome);
      });
    this.reservations.add(outcome);
    return outcome;
  }

  private giveBack(apiKeyId: string, slot: number, requests: number): void {
    this.queue(apiKeyId, slot, { requests: -requests, tokens: 0 });
  }

  private queue(apiKeyId: string, slot: number, delta: Pending): void {
    this.add(apiKeyId, slot, delta);
    if (this.closed) void this.flush();
  }

  private add(apiKeyId: string, slot: number, delta: Pending): void {
    let slots = this.pending.get(apiKeyId);
    if (!slots) {
      slots = new Map();
      this.pending.set(apiKeyId, slots);
    }
    const entry = slots.get(slot);
    if (entry) {
      entry.requests += delta.requests;
      entry.tokens += delta.tokens;
    } else slots.set(slot, { ...delta });
  }

  private tick(): void {
    const slot = slotOf(this.now());
    for (const [apiKeyId, state] of this.keys) {
      if (state.slot === slot || state.reserving) continue;
      this.retire(apiKeyId, state);
      // An idle key is forgotten; a busy one keeps its lease size.
      if (state.slot < slot - 1) this.keys.delete(apiKeyId);
    }
    void this.flush();
  }

  /** Writes pending spends and give-backs in one round trip; one write at a time. */
  private flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async write(batch: Map<string, Map<number, Pending>>): Promise<void> {
    // A slot that has left the window no longer matters to anyone.
    const oldest = slotOf(this.now()) - (WINDOW_SLOTS - 1);
    const keys: string[] = [];
    const slots: number[] = [];
    const requests: number[] = [];
    const tokens: number[] = [];
    // Sorted by (key, slot): every process locks rows in the same order.
    for (const apiKeyId of [...batch.keys()].sort()) {
      const bySlot = batch.get(apiKeyId)!;
      for (const slot of [...bySlot.keys()].sort((a, b) => a - b)) {
        const entry = bySlot.get(slot)!;
        if (slot < oldest || (entry.requests === 0 && entry.tokens === 0)) continue;
        keys.push(apiKeyId);
        slots.push(slot);
        requests.push(entry.requests);
        tokens.push(entry.tokens);
      }
    }
    if (keys.length === 0) return;
    try {
      await this.pool.query({ ...APPLY, values: [keys, slots, requests, tokens] });
      this.succeeded('flush');
    } catch (err) {
      // Nothing was written (one statement): keep the batch for the next flush.
      for (let i = 0; i < keys.length; i++) {
        this.add(keys[i]!, slots[i]!, { requests: requests[i]!, tokens: tokens[i]! });
      }
      this.failed('flush', err);
    }
  }

  private scheduleSweep(intervalMs: number): void {
    if (intervalMs <= 0 || this.closed) return;
    this.sweepTimer = setTimeout(
      () => {
        this.sweeping = this.sweep().finally(() => {
          this.sweeping = null;
          this.scheduleSweep(intervalMs);
        });
      },
      intervalMs * (0.5 + Math.random()),
    );
    this.sweepTimer.unref();
  }

  private async sweep(): Promise<void> {
    const before = slotOf(this.now()) - SWEEP_AFTER_SLOTS;
    try {
      for (let i = 0; i < MAX_SWEEP_BATCHES && !this.closed; i++) {
        const { rowCount } = await this.pool.query({ ...SWEEP, values: [before, SWEEP_BATCH] });
        if ((rowCount ?? 0) < SWEEP_BATCH) break;
      }
      this.succeeded('sweep');
    } catch (err) {
      this.failed('sweep', err);
    }
  }

  private failed(operation: Operation, err: unknown): void {
    if (operation === 'admit') this.pausedUntil = this.now() + this.pauseAfterErrorMs;
    if (this.failing.has(operation)) return;
    this.failing.add(operation);
    this.options.onError?.(new Error(FAILURE[operation], { cause: err }));
  }

  private succeeded(operation: Operation): void {
    this.failing.delete(operation);
  }
}

const refusal = (
  limit: Limit,
  limits: KeyRateLimits,
  freeSlot: number | null,
  nowMs: number,
): RateLimitRefusal => ({
  retryAfterSeconds: retryAfterSeconds(freeSlot, nowMs),
  limit,
  value: (limit === 'requests_per_minute' ? limits.requestsPerMinute : limits.tokensPerMinute) ?? 0,
});
