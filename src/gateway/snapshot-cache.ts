import { NOTIFY_CHANNEL, notificationConcerns } from '../events/postgres/event-store.js';
import { NotificationListener, Waker } from '../events/postgres/listener.js';

export interface SnapshotSource<T> {
  /** A cheap number that moves whenever the snapshot would change (a projection checkpoint). */
  revision(): Promise<number>;
  load(): Promise<T>;
  /**
   * The event categories the snapshot is made of: appends of other categories (every request's
   * wallet settlement) start no eager polling. Absent: every category.
   */
  readonly categories?: readonly string[];
}

export interface SnapshotCacheOptions<T> {
  /** Revision poll when nothing was appended lately (default 500 ms). */
  pollMs?: number;
  /** Poll after an append notification, until `eagerWindowMs` has passed (default 25 ms). */
  eagerPollMs?: number;
  /** How long after a notification to poll eagerly: the projector applies within it (default 1 s). */
  eagerWindowMs?: number;
  /** Served by current() before the first load (default: current() throws until started). */
  initial?: T;
  onReload?: (snapshot: T) => void;
  onError?: (err: unknown) => void;
}

/**
 * An in-memory snapshot of a read model for the request path (no database read per request).
 * An append notification starts a short burst of cheap revision polls (the projector applies
 * within it); the plain poll covers a lost notification. The snapshot is swapped whole.
 */
export class SnapshotCache<T> {
  private value: T | null;
  private revisionSeen = Number.NaN;
  private readonly waker = new Waker();
  private readonly listener: NotificationListener;
  private eagerUntil = 0;
  private stopped = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly source: SnapshotSource<T>,
    connectionString: string,
    private readonly options: SnapshotCacheOptions<T> = {},
  ) {
    this.value = options.initial ?? null;
    this.listener = new NotificationListener(connectionString, NOTIFY_CHANNEL, (payload) => {
      if (!notificationConcerns(payload, source.categories)) return;
      this.eagerUntil = Date.now() + (this.options.eagerWindowMs ?? 1_000);
      this.waker.notify();
    });
  }

  async start(): Promise<T> {
    await this.listener.ensure();
    await this.refresh(true);
    this.running ??= this.loop();
    return this.current();
  }

  current(): T {
    if (this.value === null) throw new Error('snapshot cache not started');
    return this.value;
  }

  async refresh(force = false): Promise<boolean> {
    const revision = await this.source.revision();
    if (!force && revision === this.revisionSeen) return false;
    const value = await this.source.load();
    this.value = value;
    this.revisionSeen = revision;
    this.options.onReload?.(value);
    return true;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const eager = Date.now() < this.eagerUntil;
      await this.waker.sleep(eager ? (this.options.eagerPollMs ?? 25) : (this.options.pollMs ?? 500));
      if (this.stopped) break;
      await this.listener.ensure();
      try {
        await this.refresh();
      } catch (err) {
        this.options.onError?.(err);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.waker.notify();
    await this.running;
    await this.listener.close();
  }
}
