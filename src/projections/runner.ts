import {
  NOTIFY_CHANNEL,
  notificationConcerns,
  readEventsAfter,
  readHeadPosition,
} from '../events/postgres/event-store.js';
import { NotificationListener, Waker } from '../events/postgres/listener.js';
import { namedStatement, type Pool, withTransaction } from '../events/postgres/pool.js';
import type { Projection } from './projection.js';

export interface BatchResult {
  applied: number;
  position: number;
  rebuilt: boolean;
}

interface CheckpointRow {
  version: number;
  position: number;
}

// Every batch of every projection runs these: named, so each is planned once per connection.
const ensureCheckpoint = namedStatement(
  'svc_checkpoint_ensure',
  `INSERT INTO svc_projection_checkpoints (name, version, position) VALUES ($1, $2, 0)
   ON CONFLICT (name) DO NOTHING`,
);
const lockCheckpoint = namedStatement(
  'svc_checkpoint_lock',
  'SELECT version, position FROM svc_projection_checkpoints WHERE name = $1 FOR UPDATE',
);
const moveCheckpoint = namedStatement(
  'svc_checkpoint_move',
  'UPDATE svc_projection_checkpoints SET version = $2, position = $3, updated_at = now() WHERE name = $1',
);

/**
 * Applies one batch: locks the projection's checkpoint row (so two runners never apply one event),
 * rebuilds when the stored version differs, reads the next events and moves the checkpoint, all in
 * one transaction.
 */
export const runBatch = async (
  pool: Pool,
  projection: Projection,
  options: { batchSize?: number; forceRebuild?: boolean } = {},
): Promise<BatchResult> =>
  withTransaction(pool, async (client) => {
    await client.query(ensureCheckpoint([projection.name, -1]));
    const { rows } = await client.query<CheckpointRow>(lockCheckpoint([projection.name]));
    let { version, position } = rows[0]!;
    let rebuilt = false;
    if (version !== projection.version || options.forceRebuild) {
      await projection.reset(client);
      position = 0;
      version = projection.version;
      rebuilt = true;
    }
    // Appends commit in position order, so every event up to this head is visible to the read below;
    // a category-filtered projection may then move past positions that hold none of its events.
    const head = await readHeadPosition(client);
    const limit = options.batchSize ?? 1_000;
    const events = await readEventsAfter(client, {
      after: position,
      limit,
      categories: projection.categories,
    });
    const from = position;
    if (events.length > 0) {
      await projection.apply(client, events);
      position = events[events.length - 1]!.globalPosition;
    }
    if (events.length < limit) position = Math.max(position, head);
    if (position !== from || rebuilt) {
      await client.query(moveCheckpoint([projection.name, version, position]));
    }
    return { applied: events.length, position, rebuilt };
  });

/**
 * A number that moves whenever the projection's read model changed: the position of the last event of
 * its categories at or before its checkpoint. The checkpoint itself also moves past other categories'
 * events (every wallet settlement), which would reload a snapshot of the read model for nothing. Read
 * from the events, it holds whatever moved the checkpoint (a server of an earlier version included).
 * Unnamed: one index probe per category, planned with the table's size of the moment.
 */
export const readModelRevision = async (
  pool: Pool,
  name: string,
  categories: readonly string[],
): Promise<number> => {
  const { rows } = await pool.query<{ revision: number | null }>(
    `SELECT max(last.global_position) AS revision
       FROM unnest($2::text[]) AS c (category)
       CROSS JOIN LATERAL (
         SELECT e.global_position FROM svc_events e
          WHERE e.category = c.category
            AND e.global_position <= (SELECT position FROM svc_projection_checkpoints WHERE name = $1)
          ORDER BY e.global_position DESC LIMIT 1) last`,
    [name, categories],
  );
  return rows[0]?.revision ?? 0;
};

export const checkpointOf = async (pool: Pool, name: string): Promise<CheckpointRow | null> => {
  const { rows } = await pool.query<CheckpointRow>(
    'SELECT version, position FROM svc_projection_checkpoints WHERE name = $1',
    [name],
  );
  return rows[0] ?? null;
};

/**
 * Rebuild one projection from position 0 to the current head, reporting progress. The reset and the
 * first batch commit together, so readers never see the read model emptied without a checkpoint.
 */
export const rebuildProjection = async (
  pool: Pool,
  projection: Projection,
  onProgress: (position: number, head: number) => void = () => {},
  options: { batchSize?: number } = {},
): Promise<{ events: number; position: number }> => {
  const head = await readHeadPosition(pool);
  let events = 0;
  let first = await runBatch(pool, projection, { ...options, forceRebuild: true });
  events += first.applied;
  onProgress(first.position, head);
  while (first.position < head) {
    first = await runBatch(pool, projection, options);
    events += first.applied;
    onProgress(first.position, head);
  }
  return { events, position: first.position };
};

/**
 * Keeps a set of projections up to date: runs batches until each is caught up, then sleeps until an
 * append notification or the poll interval.
 */
export class ProjectionRunner {
  private stopped = false;
  private running: Promise<void> | null = null;
  private readonly waker = new Waker();
  private readonly listener: NotificationListener;
  lastError: unknown = null;

  constructor(
    private readonly pool: Pool,
    connectionString: string,
    private readonly projections: readonly Projection[],
    private readonly options: {
      batchSize?: number;
      pollMs?: number;
      onError?: (name: string, err: unknown) => void;
    } = {},
  ) {
    // Woken by appends of the categories its projections follow; waitForHead wakes it itself.
    const categories = projections.every((p) => p.categories)
      ? [...new Set(projections.flatMap((p) => p.categories ?? []))]
      : undefined;
    this.listener = new NotificationListener(connectionString, NOTIFY_CHANNEL, (payload) => {
      if (notificationConcerns(payload, categories)) this.waker.notify();
    });
  }

  start(): void {
    this.running ??= this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      await this.listener.ensure();
      let busy = false;
      for (const projection of this.projections) {
        if (this.stopped) break;
        try {
          const r = await runBatch(this.pool, projection, { batchSize: this.options.batchSize });
          if (r.applied > 0) busy = true;
          this.lastError = null;
        } catch (err) {
          this.lastError = err;
          this.options.onError?.(projection.name, err);
        }
      }
      if (!busy && !this.stopped) await this.waker.sleep(this.options.pollMs ?? 1_000);
    }
  }

  /** Resolves when every projection has reached the head position seen at call time. */
  async waitForHead(timeoutMs = 10_000): Promise<void> {
    const head = await readHeadPosition(this.pool);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await this.pool.query<{ position: number; name: string }>(
        'SELECT name, position FROM svc_projection_checkpoints WHERE name = ANY($1)',
        [this.projections.map((p) => p.name)],
      );
      const behind = this.projections.filter((p) => {
        const row = rows.find((r) => r.name === p.name);
        return !row || row.position < head;
      });
      if (behind.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(`projections behind head ${head}: ${behind.map((p) => p.name).join(', ')}`);
      this.waker.notify();
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.waker.notify();
    await this.running;
    await this.listener.close();
  }
}

/**
 * Read-your-writes: brings `projection` up to `position`, applying batches in this process when no
 * projector got there first (the checkpoint lock keeps this safe beside a running projector). A
 * batch answers the checkpoint it committed, so only the first look reads the checkpoint table.
 */
export const catchUp = async (pool: Pool, projection: Projection, position: number): Promise<void> => {
  const cp = await checkpointOf(pool, projection.name);
  if (cp && cp.version === projection.version && cp.position >= position) return;
  while ((await runBatch(pool, projection)).position < position);
};
