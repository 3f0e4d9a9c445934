import type { AnalyticsStore } from '../analytics/port.js';
import type { LiveScope } from './live.js';
import { type RawRow, REQUEST_COLUMNS, shapeRequest } from './requests.js';
import { EVENT_COLUMNS, shapeEvent, traceTenant } from './traces.js';

/**
 * What the live trace feed (trace-live.ts) reads: a session's trace events and request rows as
 * SSE records, each with its position (the ingest time of its earliest stored copy, so a
 * redelivered copy keeps the first one's place) and its latest copy's ingest time.
 */

export type LiveKind = 'trace' | 'request';

export interface LiveItem {
  /** Ids of the two kinds never meet in a dedupe set. */
  kind: LiveKind;
  id: string;
  event: string;
  position: number;
  ingestedMs: number;
  data: RawRow;
}

export interface Position {
  position: number;
  id: string;
}

export const after = (x: Position, y: Position): boolean =>
  x.position > y.position || (x.position === y.position && x.id > y.id);
export const byPosition = (x: Position, y: Position): number => (after(x, y) ? 1 : after(y, x) ? -1 : 0);

/** A keyset point of a poll: the latest copy's ingest time and id of the last row read. */
export interface Keyset {
  ms: number;
  id: string;
}

const KINDS = {
  trace: {
    table: 'trace_events',
    columns: EVENT_COLUMNS,
    id: 'event_id',
    by: 'project_id, trace_id, event_id',
  },
  request: { table: 'requests', columns: REQUEST_COLUMNS, id: 'request_id', by: 'request_id' },
} as const;

// An SSE field ends at a line break: one in an id or a name must not start a forged field.
const field = (v: string) => v.replace(/[\r\n]+/g, ' ');

export const sseFrame = (item: LiveItem): string =>
  `id: ${field(item.id)}\nevent: ${field(item.event)}\ndata: ${JSON.stringify(item.data)}\n\n`;

const toItem = (kind: LiveKind, r: RawRow): LiveItem => {
  const { position_ms, ingested_ms, ...row } = r;
  return kind === 'trace'
    ? {
        kind,
        id: String(r.event_id),
        event: String(r.event_name || 'trace.event'),
        position: Number(position_ms),
        ingestedMs: Number(ingested_ms),
        data: shapeEvent(row),
      }
    : {
        kind,
        id: String(r.request_id),
        event: 'request.completed',
        position: Number(position_ms),
        ingestedMs: Number(ingested_ms),
        data: shapeRequest(row),
      };
};

/**
 * Records of one kind of the session, one per id (the latest copy's content), positioned at or
 * after `fromMs`. A poll (`since` set) reads the ids with a copy ingested since then, past the
 * keyset `after` when given, in ingest order then id; otherwise (a resume) in position order.
 */
export const readKind = async (
  a: AnalyticsStore,
  scope: LiveScope,
  kind: LiveKind,
  o: { fromMs: number; since: Date | null; after?: Keyset | null; limit: number },
): Promise<LiveItem[]> => {
  const k = KINDS[kind];
  const t = traceTenant(scope);
  const base = `${t.sql} AND session_id = {session_id:String}`;
  const recent = o.since
    ? `AND ${k.id} IN (SELECT ${k.id} FROM ${k.table} WHERE ${base} AND ingested_at >= {since:DateTime64(3, 'UTC')})`
    : '';
  const past = o.after
    ? `AND (ingested_ms > {after_ms:Int64} OR (ingested_ms = {after_ms:Int64} AND ${k.id} > {after_id:String}))`
    : '';
  const rows = await a.query(
    `SELECT * FROM (
       SELECT ${k.columns}, toUnixTimestamp64Milli(ingested_at) AS ingested_ms,
         toUnixTimestamp64Milli(min(ingested_at) OVER (PARTITION BY ${k.by})) AS position_ms
       FROM ${k.table} WHERE ${base} ${recent}
       ORDER BY ingested_at DESC LIMIT 1 BY ${k.by})
     WHERE position_ms >= {from_ms:Int64} ${past}
     ORDER BY ${o.since ? 'ingested_ms' : 'position_ms'}, ${k.id} LIMIT {limit:UInt32}`,
    {
      ...t.params,
      session_id: scope.sessionId,
      from_ms: o.fromMs,
      since: o.since ?? new Date(0),
      after_ms: o.after?.ms ?? 0,
      after_id: o.after?.id ?? '',
      limit: o.limit,
    },
  );
  return rows.map((r) => toItem(kind, r));
};

/** The session's records positioned after `from`, both kinds, in position order, at most `limit`. */
export const recordsAfter = async (
  a: AnalyticsStore,
  scope: LiveScope,
  from: Position,
  limit: number,
): Promise<LiveItem[]> => {
  const read = (kind: LiveKind) => readKind(a, scope, kind, { fromMs: from.position, since: null, limit });
  const [events, requests] = await Promise.all([read('trace'), read('request')]);
  return [...events, ...requests]
    .filter((x) => after(x, from))
    .sort(byPosition)
    .slice(0, limit);
};

/** The position of a record of the session by id (trace event first), or null when unknown. */
export const positionOf = async (
  a: AnalyticsStore,
  scope: LiveScope,
  id: string,
): Promise<Position | null> => {
  const t = traceTenant(scope);
  const params = { ...t.params, session_id: scope.sessionId, id };
  const at = async (kind: LiveKind) => {
    const k = KINDS[kind];
    const rows = await a.query<{ p: string }>(
      `SELECT toUnixTimestamp64Milli(min(ingested_at)) AS p FROM ${k.table}
       WHERE ${t.sql} AND session_id = {session_id:String} AND ${k.id} = {id:String} HAVING count() > 0`,
      params,
    );
    return rows[0] ? Number(rows[0].p) : null;
  };
  const p = (await at('trace')) ?? (await at('request'));
  return p === null ? null : { position: p, id };
};
