import type { AnalyticsStore } from '../analytics/port.js';
import { type RawRow, REQUEST_COLUMNS, shapeRequest } from './requests.js';

/**
 * Live request.completed feeds of sessions (SPEC 4.5 /api/sessions/:id/live).
 *
 * Choice: poll the analytics `requests` table rather than attach an ephemeral bus consumer. Rows
 * appear there only after ingest made them durable, so a client never sees an event the query
 * API cannot then return; the poll works the same with the Postgres-table bus and JetStream, needs
 * no bus permissions for the query role, and survives ingest redelivery. The cost is latency of
 * one poll interval plus the ingest flush. Redelivered copies are deduped by request id.
 *
 * Every stream of one session (org, project, session id) shares one poll and one heartbeat, so a
 * hundred tabs on one session cost one query per interval, not a hundred; and streams are counted
 * per session and per organization, so no tenant can hold more than its share (SPEC 8).
 */
export interface LiveLimits {
  pollMs: number;
  heartbeatMs: number;
  maxPerSession: number;
  maxPerOrg: number;
}

export interface LiveScope {
  orgId: string;
  projectId: string | null;
  sessionId: string;
}

export type LiveOpened =
  | { ok: true; close: () => void }
  | { ok: false; limit: 'session' | 'organization'; max: number };

/** Request ids remembered per feed to drop redelivered copies; older ones are forgotten. */
const SEEN_CAP = 10_000;

/** One session's poll, shared by its subscribers. */
class SessionFeed {
  readonly subscribers = new Set<(frame: string) => void>();
  private readonly seen = new Set<string>();
  private cursor: Date;
  private inFlight = false;
  private readonly pollTimer: NodeJS.Timeout;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly a: AnalyticsStore,
    private readonly scope: LiveScope,
    limits: LiveLimits,
    private readonly onError: (err: unknown) => void,
  ) {
    // Rows ingested during the poll interval before the first subscriber came are streamed too.
    this.cursor = new Date(Date.now() - limits.pollMs);
    this.pollTimer = setInterval(() => void this.poll(), limits.pollMs);
    this.heartbeat = setInterval(() => this.send(': heartbeat\n\n'), limits.heartbeatMs);
    void this.poll();
  }

  stop(): void {
    clearInterval(this.pollTimer);
    clearInterval(this.heartbeat);
  }

  private send(frame: string): void {
    for (const write of this.subscribers) write(frame);
  }

  private async poll(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      const rows = await this.a.query<RawRow & { ingested_ms: string }>(
        `SELECT ${REQUEST_COLUMNS}, toUnixTimestamp64Milli(ingested_at) AS ingested_ms FROM requests
         WHERE org_id = {org_id:String} AND session_id = {session_id:String}
           AND ({project_id:String} = '' OR project_id = {project_id:String})
           AND ingested_at >= {since:DateTime64(3, 'UTC')}
         ORDER BY ingested_at, request_id LIMIT 1000`,
        {
          org_id: this.scope.orgId,
          session_id: this.scope.sessionId,
          project_id: this.scope.projectId ?? '',
          since: this.cursor,
        },
      );
      for (const row of rows) {
        const id = String(row.request_id);
        const at = Number(row.ingested_ms);
        if (at > this.cursor.getTime()) this.cursor = new Date(at);
        if (this.seen.has(id)) continue;
        this.seen.add(id);
        if (this.seen.size > SEEN_CAP) this.seen.delete(this.seen.values().next().value!);
        const { ingested_ms: _drop, ...event } = row;
        this.send(`event: request.completed\nid: ${id}\ndata: ${JSON.stringify(shapeRequest(event))}\n\n`);
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.inFlight = false;
    }
  }
}

export class LiveSessions {
  private readonly feeds = new Map<string, SessionFeed>();
  private readonly perOrg = new Map<string, number>();

  constructor(
    private readonly a: AnalyticsStore,
    private readonly limits: LiveLimits,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Subscribes `write` to the session's feed, or says which limit refuses it. */
  open(scope: LiveScope, write: (frame: string) => void): LiveOpened {
    const key = `${scope.orgId}\u0000${scope.projectId ?? ''}\u0000${scope.sessionId}`;
    let feed = this.feeds.get(key);
    if ((feed?.subscribers.size ?? 0) >= this.limits.maxPerSession)
      return { ok: false, limit: 'session', max: this.limits.maxPerSession };
    const org = this.perOrg.get(scope.orgId) ?? 0;
    if (org >= this.limits.maxPerOrg) return { ok: false, limit: 'organization', max: this.limits.maxPerOrg };
    if (!feed) {
      feed = new SessionFeed(this.a, scope, this.limits, this.onError);
      this.feeds.set(key, feed);
    }
    const subscribed = feed;
    subscribed.subscribers.add(write);
    this.perOrg.set(scope.orgId, org + 1);
    let closed = false;
    return {
      ok: true,
      close: () => {
        if (closed) return;
        closed = true;
        subscribed.subscribers.delete(write);
        const left = (this.perOrg.get(scope.orgId) ?? 1) - 1;
        if (left > 0) this.perOrg.set(scope.orgId, left);
        else this.perOrg.delete(scope.orgId);
        if (subscribed.subscribers.size === 0) {
          subscribed.stop();
          this.feeds.delete(key);
        }
      },
    };
  }

  /** Stops every feed (shutdown); subscribers' connections are closed by the server. */
  stop(): void {
    for (const feed of this.feeds.values()) feed.stop();
    this.feeds.clear();
    this.perOrg.clear();
  }
}
