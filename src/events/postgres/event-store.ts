import { fieldOf, unstorableIn } from '../../lib/storable.js';
import {
  type AppendResult,
  categoryOf,
  type EventStore,
  type ExpectedVersion,
  IdempotencyMismatchError,
  type NewEvent,
  type ReadAllOptions,
  type StoredEvent,
  type StreamAppend,
  type Subscription,
  UnstorableEventError,
  VersionConflictError,
} from '../event-store.js';
import { NotificationListener, Waker } from './listener.js';
import { namedStatement, type Pool, type PoolClient } from './pool.js';

interface EventRow {
  global_position: number;
  stream_id: string;
  stream_version: number;
  message_id: string;
  type: string;
  schema_version: number;
  data: unknown;
  metadata: StoredEvent['metadata'];
  recorded_at: Date;
}

const COLUMNS =
  'global_position, stream_id, stream_version, message_id, type, schema_version, data, metadata, recorded_at';

const toEvent = (r: EventRow): StoredEvent => ({
  globalPosition: r.global_position,
  streamId: r.stream_id,
  streamVersion: r.stream_version,
  messageId: r.message_id,
  type: r.type,
  schemaVersion: r.schema_version,
  data: r.data,
  metadata: r.metadata,
  recordedAt: r.recorded_at,
});

/** Pools and checked-out clients both answer queries: projections read inside their transaction. */
type Queryable = Pick<Pool, 'query'> | Pick<PoolClient, 'query'>;

// Every projection batch reads the head: named, so it is planned once per connection (a singleton row).
// Not the reads of events: svc_events grows from empty, and a plan cached while it was small would
// keep scanning it once large, until the next ANALYZE.
const headPosition = namedStatement(
  'svc_head_position',
  'SELECT last_position FROM svc_event_position WHERE singleton',
);

/** Events after a global position, in order; optionally only some categories. */
export const readEventsAfter = async (
  db: Queryable,
  { after, limit, categories }: ReadAllOptions,
): Promise<StoredEvent[]> => {
  const { rows } = categories
    ? await db.query<EventRow>(
        `SELECT ${COLUMNS} FROM svc_events WHERE global_position > $1 AND category = ANY($3)
         ORDER BY global_position LIMIT $2`,
        [after, limit, categories],
      )
    : await db.query<EventRow>(
        `SELECT ${COLUMNS} FROM svc_events WHERE global_position > $1 ORDER BY global_position LIMIT $2`,
        [after, limit],
      );
  return rows.map(toEvent);
};

/** The last global position committed. */
export const readHeadPosition = async (db: Queryable): Promise<number> =>
  (await db.query<{ last_position: number }>(headPosition())).rows[0]?.last_position ?? 0;

const expectedToSql = (expected: ExpectedVersion): number | null =>
  expected === 'any' ? null : expected === 'no_stream' ? 0 : expected;

const EVENT_MAX_DEPTH = 1_000;

/**
 * The events as svc_append_events takes them. jsonb refuses NUL and unpaired surrogates: say which
 * event and field, not a driver error. Nesting is bounded only where JSON.stringify and jsonb's
 * parser would run out of stack.
 */
const payloadOf = (streamId: string, events: readonly NewEvent[]): string => {
  const payload = events.map((e) => ({
    message_id: e.messageId,
    type: e.type,
    schema_version: e.schemaVersion ?? 1,
    data: e.data,
    metadata: e.metadata ?? {},
  }));
  for (const e of payload) {
    const bad = unstorableIn({ data: e.data, metadata: e.metadata }, EVENT_MAX_DEPTH);
    if (bad) throw new UnstorableEventError(streamId, e.type, fieldOf(bad.path), bad.problem);
  }
  return JSON.stringify(payload);
};

const resultOf = (
  rows: readonly { global_position: number; stream_version: number; replayed: boolean }[],
): AppendResult => {
  const last = rows[rows.length - 1]!;
  return {
    nextVersion: last.stream_version,
    lastPosition: last.global_position,
    positions: rows.map((r) => r.global_position),
    replayed: rows[0]!.replayed,
  };
};

const rethrow = (err: unknown, streamId: string, expected: ExpectedVersion): never => {
  const e = err as { code?: string; detail?: string; message: string };
  if (e.code === 'SVC01') throw new VersionConflictError(streamId, expected, Number(e.detail));
  if (e.code === 'SVC02') throw new IdempotencyMismatchError(e.message);
  // Two appenders racing to the same unique key cannot happen under the counter lock, but the
  // unique constraints stay the backstop: report them as the conflict they are.
  if (e.code === '23505') throw new VersionConflictError(streamId, expected, -1);
  throw err;
};

export const NOTIFY_CHANNEL = 'svc_events';

/**
 * Whether an append notification (`<position> <category>,...`, migrations/postgres/0023) concerns a
 * listener that follows `categories` (undefined: every category). A payload that names no
 * categories (from an older server) concerns every listener.
 */
export const notificationConcerns = (
  payload: string | undefined,
  categories: readonly string[] | undefined,
): boolean => {
  if (categories === undefined || payload === undefined) return true;
  const space = payload.indexOf(' ');
  if (space === -1) return true;
  return payload
    .slice(space + 1)
    .split(',')
    .some((c) => categories.includes(c));
};

/** PostgreSQL adapter of the event store port (migrations/postgres/0001_event_store.sql). */
export class PostgresEventStore implements EventStore {
  private readonly subscriptions = new Set<Subscription>();

  constructor(
    private readonly pool: Pool,
    private readonly connectionString: string,
  ) {}

  async append(
    streamId: string,
    expected: ExpectedVersion,
    events: readonly NewEvent[],
  ): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    const payload = payloadOf(streamId, events);
    const { rows } = await this.pool
      .query<{ global_position: number; stream_version: number; replayed: boolean }>(
        'SELECT * FROM svc_append_events($1, $2, $3, $4)',
        [streamId, categoryOf(streamId), expectedToSql(expected), payload],
      )
      .catch((err: unknown) => rethrow(err, streamId, expected));
    return resultOf(rows);
  }

  /**
   * One statement, one transaction, one NOTIFY for every append (migrations/postgres/0012): what
   * ingest settles a flush with. A failure names the stream that failed only when PostgreSQL says
   * which one (a version conflict); the others are reported as they are.
   */
  async appendMany(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
    if (appends.length === 0) return [];
    for (const a of appends)
      if (a.events.length === 0) throw new Error(`append to ${a.streamId} needs at least one event`);
    const payloads = appends.map((a) => payloadOf(a.streamId, a.events));
    const { rows } = await this.pool
      .query<{ ord: number; global_position: number; stream_version: number; replayed: boolean }>(
        'SELECT * FROM svc_append_events_many($1::text[], $2::text[], $3::bigint[], $4::jsonb[])',
        [
          appends.map((a) => a.streamId),
          appends.map((a) => categoryOf(a.streamId)),
          appends.map((a) => expectedToSql(a.expected)),
          payloads,
        ],
      )
      .catch((err: unknown) => {
        const conflicted = /for stream (\S+):/.exec((err as Error).message)?.[1];
        const a = appends.find((x) => x.streamId === conflicted) ?? appends[0]!;
        return rethrow(err, a.streamId, a.expected);
      });
    const byAppend: (typeof rows)[] = appends.map(() => []);
    for (const r of rows) byAppend[r.ord - 1]!.push(r);
    return byAppend.map((r, i) => {
      if (r.length === 0) throw new Error(`append many: no result for ${appends[i]!.streamId}`);
      return resultOf(r);
    });
  }

  async readStream(streamId: string, options: { fromVersion?: number } = {}) {
    const { rows } = await this.pool.query<EventRow>(
      `SELECT ${COLUMNS} FROM svc_events WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version`,
      [streamId, options.fromVersion ?? 1],
    );
    const events = rows.map(toEvent);
    let version = events.at(-1)?.streamVersion ?? 0;
    if (events.length === 0 && (options.fromVersion ?? 1) > 1) {
      const r = await this.pool.query<{ v: number }>(
        'SELECT coalesce(max(stream_version), 0)::bigint AS v FROM svc_events WHERE stream_id = $1',
        [streamId],
      );
      version = r.rows[0]!.v;
    }
    return { version, events };
  }

  readAll(options: ReadAllOptions): Promise<StoredEvent[]> {
    return readEventsAfter(this.pool, options);
  }

  headPosition(): Promise<number> {
    return readHeadPosition(this.pool);
  }

  subscribe(
    after: number,
    handler: (batch: StoredEvent[]) => Promise<void>,
    options: {
      batchSize?: number;
      pollMs?: number;
      categories?: readonly string[];
      onError?: (err: unknown) => void;
    } = {},
  ): Subscription {
    const batchSize = options.batchSize ?? 500;
    const pollMs = options.pollMs ?? 1_000;
    let position = after;
    let closed = false;
    const waker = new Waker();
    const listener = new NotificationListener(this.connectionString, NOTIFY_CHANNEL, (payload) => {
      if (notificationConcerns(payload, options.categories)) waker.notify();
    });
    let markCaughtUp: () => void = () => {};
    const caughtUp = new Promise<void>((resolve) => {
      markCaughtUp = resolve;
    });

    const loop = async () => {
      while (!closed) {
        await listener.ensure();
        try {
          const batch = await this.readAll({
            after: position,
            limit: batchSize,
            categories: options.categories,
          });
          if (batch.length > 0) {
            await handler(batch);
            position = batch[batch.length - 1]!.globalPosition;
            if (batch.length === batchSize) continue;
          }
          markCaughtUp();
        } catch (err) {
          options.onError?.(err);
        }
        if (!closed) await waker.sleep(pollMs);
      }
    };
    const running = loop();
    const subscription: Subscription = {
      caughtUp,
      close: async () => {
        closed = true;
        waker.notify();
        await running;
        await listener.close();
        this.subscriptions.delete(subscription);
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.close()));
  }
}
