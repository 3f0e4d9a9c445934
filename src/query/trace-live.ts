import type { AnalyticsStore } from '../analytics/port.js';
import type { LiveLimits, LiveOpened, LiveScope } from './live.js';
import {
  after,
  byPosition,
  type Keyset,
  type LiveItem,
  type LiveKind,
  type Position,
  positionOf,
  readKind,
  recordsAfter,
  sseFrame,
} from './trace-live-reads.js';

/**
 * Live trace feeds of sessions (SPEC 4.5 /api/sessions/:id/traces/live, SPEC 6 last paragraph):
 * the session's trace lifecycle events (trace_events rows) and its request.completed events
 * (requests rows), as one SSE stream. Like live.ts it polls the analytics store, so a client only
 * ever sees what the query API can then return; one poll and one heartbeat per session are shared
 * by its subscribers; streams are counted per session and per organization.
 *
 * Order: each poll sends the records newly ingested for the session, each id once per feed, in
 * the order of their earliest stored copy's ingest time, then id (a redelivered copy is not news).
 * Polls look back LAG_MS behind the newest row they saw, so a row stamped before it became
 * visible is not skipped; a burst larger than a poll's page (one projector batch shares one ingest
 * time) is read page by page past an (ingest time, id) keyset, so no poll reads the same page twice.
 *
 * Resumption (Last-Event-ID): a feed keeps a journal of the last JOURNAL_CAP records it sent, and
 * outlives its last subscriber by IDLE_GRACE_MS (paused, its cursor and dedupe set kept), so a
 * client reconnecting to the same process gets exactly the records sent after its last id, then
 * the live feed (including what was ingested while it was away), and nothing it had already. An id
 * the journal does not hold (another query process, a restart, an old id) resumes from the store:
 * the records of the session positioned after it. That is exact until a merge collapses a
 * redelivered record into its newest copy, which moves it later; such a record may then be sent
 * again. An id the session does not have resumes nothing: the live feed only.
 */

/** How far behind the newest ingest time seen each poll looks again (rows visible late). */
const LAG_MS = 5_000;
const SEEN_CAP = 10_000;
/** Records sent at most on a resume; the client can read the rest from the trace routes. */
const BACKLOG_CAP = 5_000;
const POLL_CAP = 1_000;
/** Records a feed remembers for exact resumption. */
const JOURNAL_CAP = 1_000;
/** How long a feed without subscribers is kept (paused) for a client that reconnects. */
const IDLE_GRACE_MS = 60_000;
/** Paused feeds kept at most; the longest idle goes first. */
const MAX_IDLE_FEEDS = 256;

class Subscriber {
  /** Live items held while the resume backlog is read; null once it has been sent. */
  pending: LiveItem[] | null;
  private readonly backlogIds = new Set<string>();
  private from: Position | null = null;
  closed = false;

  constructor(
    private readonly write: (frame: string) => void,
    resuming: boolean,
  ) {
    this.pending = resuming ? [] : null;
  }

  deliver(item: LiveItem): void {
    if (this.closed) return;
    if (this.pending) {
      this.pending.push(item);
      return;
    }
    if (this.from && !after(item, this.from)) return;
    if (this.backlogIds.has(`${item.kind}:${item.id}`)) return;
    this.write(sseFrame(item));
  }

  heartbeat(frame: string): void {
    if (!this.closed) this.write(frame);
  }

  /** Sends the backlog, then what the feed delivered meanwhile, skipping what the backlog sent. */
  resume(from: Position | null, backlog: LiveItem[]): void {
    if (this.closed) return;
    this.from = from;
    for (const item of backlog) {
      this.backlogIds.add(`${item.kind}:${item.id}`);
      this.write(sseFrame(item));
    }
    const held = this.pending ?? [];
    this.pending = null;
    for (const item of held) this.deliver(item);
  }
}

class TraceSessionFeed {
  readonly subscribers = new Set<Subscriber>();
  private readonly seen = new Set<string>();
  private readonly journal: LiveItem[] = [];
  private readonly startMs: number;
  private cursorMs: number;
  private inFlight = false;
  private readonly catchUp: Record<LiveKind, Keyset | null> = { trace: null, request: null };
  private pollTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** When the last subscriber left; null while the feed runs. */
  idleSince: number | null = null;

  constructor(
    private readonly a: AnalyticsStore,
    private readonly scope: LiveScope,
    private readonly limits: LiveLimits,
    private readonly onError: (err: unknown) => void,
  ) {
    // Records first ingested during the poll interval before the first subscriber are streamed too.
    this.startMs = Date.now() - limits.pollMs;
    this.cursorMs = this.startMs;
    this.run();
  }

  /** Starts (or restarts after a pause) the poll and the heartbeat. */
  run(): void {
    this.idleSince = null;
    if (this.pollTimer) return;
    this.pollTimer = setInterval(() => void this.poll(), this.limits.pollMs);
    this.heartbeatTimer = setInterval(() => {
      for (const s of this.subscribers) s.heartbeat(': heartbeat\n\n');
    }, this.limits.heartbeatMs);
    void this.poll();
  }

  /** Stops polling; the cursor, dedupe set and journal stay for a reconnecting client. */
  pause(): void {
    clearInterval(this.pollTimer);
    clearInterval(this.heartbeatTimer);
    this.pollTimer = undefined;
    this.heartbeatTimer = undefined;
    this.idleSince = Date.now();
  }

  /** The journaled records sent after `id`, or null when the journal does not hold it. */
  sentAfter(id: string): LiveItem[] | null {
    for (let i = this.journal.length - 1; i >= 0; i--)
      if (this.journal[i]!.id === id) return this.journal.slice(i + 1);
    return null;
  }

  private async poll(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      const kinds: LiveKind[] = ['trace', 'request'];
      const pages = await Promise.all(
        kinds.map((kind) =>
          readKind(this.a, this.scope, kind, {
            fromMs: this.startMs,
            since: new Date(this.catchUp[kind] ? this.catchUp[kind].ms : this.cursorMs - LAG_MS),
            after: this.catchUp[kind],
            limit: POLL_CAP,
          }),
        ),
      );
      kinds.forEach((kind, i) => {
        const page = pages[i]!;
        const last = page[page.length - 1];
        // A full page: the next poll goes on past its last row instead of looking back.
        this.catchUp[kind] = page.length >= POLL_CAP && last ? { ms: last.ingestedMs, id: last.id } : null;
      });
      // A poll answered after a pause began is kept for the journal, not lost.
      for (const item of pages.flat().sort(byPosition)) {
        if (item.ingestedMs > this.cursorMs) this.cursorMs = item.ingestedMs;
        const key = `${item.kind}:${item.id}`;
        if (this.seen.has(key)) continue;
        this.seen.add(key);
        if (this.seen.size > SEEN_CAP) this.seen.delete(this.seen.values().next().value!);
        this.journal.push(item);
        if (this.journal.length > JOURNAL_CAP) this.journal.shift();
        for (const s of this.subscribers) s.deliver(item);
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.inFlight = false;
    }
  }
}

export class TraceLiveSessions {
  private readonly feeds = new Map<string, TraceSessionFeed>();
  private readonly perOrg = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly a: AnalyticsStore,
    private readonly limits: LiveLimits,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.sweeper = setInterval(() => this.evictIdle(), Math.min(IDLE_GRACE_MS, 10_000));
    this.sweeper.unref();
  }

  /**
   * Subscribes `write` to the session's feed, or says which limit refuses it. With `lastEventId`,
   * the records after it are written first (an unknown id resumes nothing: the live feed only).
   */
  open(scope: LiveScope, write: (frame: string) => void, lastEventId?: string): LiveOpened {
    const key = `${scope.orgId}\u0000${scope.projectId ?? ''}\u0000${scope.sessionId}`;
    let feed = this.feeds.get(key);
    if ((feed?.subscribers.size ?? 0) >= this.limits.maxPerSession)
      return { ok: false, limit: 'session', max: this.limits.maxPerSession };
    const org = this.perOrg.get(scope.orgId) ?? 0;
    if (org >= this.limits.maxPerOrg) return { ok: false, limit: 'organization', max: this.limits.maxPerOrg };
    if (!feed) {
      feed = new TraceSessionFeed(this.a, scope, this.limits, this.onError);
      this.feeds.set(key, feed);
    }
    const subscribed = feed;
    const subscriber = new Subscriber(write, Boolean(lastEventId));
    if (lastEventId) {
      // Taken now: what the feed sends from here on is held by the subscriber until the resume.
      const journaled = subscribed.sentAfter(lastEventId);
      // Written after the caller has sent the response head, never before it.
      if (journaled) setImmediate(() => subscriber.resume(null, journaled));
      else void this.resumeFromStore(scope, subscriber, lastEventId);
    }
    subscribed.subscribers.add(subscriber);
    subscribed.run();
    this.perOrg.set(scope.orgId, org + 1);
    return {
      ok: true,
      close: () => {
        if (subscriber.closed) return;
        subscriber.closed = true;
        subscribed.subscribers.delete(subscriber);
        const left = (this.perOrg.get(scope.orgId) ?? 1) - 1;
        if (left > 0) this.perOrg.set(scope.orgId, left);
        else this.perOrg.delete(scope.orgId);
        if (subscribed.subscribers.size === 0) {
          subscribed.pause();
          this.evictIdle();
        }
      },
    };
  }

  private async resumeFromStore(
    scope: LiveScope,
    subscriber: Subscriber,
    lastEventId: string,
  ): Promise<void> {
    try {
      const from = await positionOf(this.a, scope, lastEventId);
      const backlog = from ? await recordsAfter(this.a, scope, from, BACKLOG_CAP) : [];
      subscriber.resume(from, backlog);
    } catch (err) {
      this.onError(err);
      subscriber.resume(null, []);
    }
  }

  /** Drops paused feeds idle past the grace period, and the longest idle beyond MAX_IDLE_FEEDS. */
  private evictIdle(): void {
    const idle = [...this.feeds.entries()]
      .filter(([, f]) => f.idleSince !== null)
      .sort(([, x], [, y]) => x.idleSince! - y.idleSince!);
    const now = Date.now();
    idle.forEach(([key, f], i) => {
      if (now - f.idleSince! >= IDLE_GRACE_MS || idle.length - i > MAX_IDLE_FEEDS) this.feeds.delete(key);
    });
  }

  /** Stops every feed (shutdown); subscribers' connections are closed by the server. */
  stop(): void {
    clearInterval(this.sweeper);
    for (const feed of this.feeds.values()) feed.pause();
    this.feeds.clear();
    this.perOrg.clear();
  }
}
