import type { AnalyticsStore } from '../analytics/port.js';
import { type RawRow, REQUEST_COLUMNS, shapeRequest } from './requests.js';

/**
 * Live request.completed feed of one session (SPEC 4.5 /api/sessions/:id/live).
 *
 * Choice: poll the analytics `requests` table rather than attach an ephemeral bus consumer. Rows
 * appear there only after ingest made them durable, so a client never sees an event the query
 * API cannot then return; the poll works the same with the Postgres-table bus and JetStream, needs
 * no bus permissions for the query role, and survives ingest redelivery. The cost is latency of
 * one poll interval plus the ingest flush. Redelivered copies are deduped by request id.
 */
export interface LiveOptions {
  orgId: string;
  projectId: string | null;
  sessionId: string;
  /** Rows ingested at or after this instant are streamed. */
  since: Date;
  pollMs: number;
  heartbeatMs: number;
  write: (frame: string) => boolean;
  onError: (err: unknown) => void;
}

/** Starts the poll and heartbeat; the returned function stops both (call it on disconnect). */
export const startLiveSession = (a: AnalyticsStore, o: LiveOptions): (() => void) => {
  const seen = new Set<string>();
  let cursor = o.since;
  let stopped = false;
  let inFlight = false;
  const params = {
    org_id: o.orgId,
    session_id: o.sessionId,
    project_id: o.projectId ?? '',
  };
  const poll = async () => {
    if (stopped || inFlight) return;
    inFlight = true;
    try {
      const rows = await a.query<RawRow & { ingested_ms: string }>(
        `SELECT ${REQUEST_COLUMNS}, toUnixTimestamp64Milli(ingested_at) AS ingested_ms FROM requests
         WHERE org_id = {org_id:String} AND session_id = {session_id:String}
           AND ({project_id:String} = '' OR project_id = {project_id:String})
           AND ingested_at >= {since:DateTime64(3, 'UTC')}
         ORDER BY ingested_at, request_id LIMIT 1000`,
        { ...params, since: cursor },
      );
      for (const row of rows) {
        const id = String(row.request_id);
        const at = Number(row.ingested_ms);
        if (at > cursor.getTime()) cursor = new Date(at);
        if (seen.has(id) || stopped) continue;
        seen.add(id);
        const { ingested_ms: _drop, ...event } = row;
        o.write(`event: request.completed\nid: ${id}\ndata: ${JSON.stringify(shapeRequest(event))}\n\n`);
      }
    } catch (err) {
      o.onError(err);
    } finally {
      inFlight = false;
    }
  };
  const pollTimer = setInterval(() => void poll(), o.pollMs);
  const heartbeat = setInterval(() => {
    if (!stopped) o.write(': heartbeat\n\n');
  }, o.heartbeatMs);
  void poll();
  return () => {
    stopped = true;
    clearInterval(pollTimer);
    clearInterval(heartbeat);
  };
};
