import { NOTIFY_CHANNEL } from '../../events/postgres/event-store.js';
import { NotificationListener, Waker } from '../../events/postgres/listener.js';
import type { Pool } from '../../events/postgres/pool.js';
import { loadRegistrySnapshot, registryRevision } from './load.js';
import { EMPTY_REGISTRY, type RegistrySnapshot } from './snapshot.js';

export interface RegistryCacheOptions {
  /** Revision poll when nothing was appended lately (default 500 ms). */
  pollMs?: number;
  /** Poll after an append notification, until `eagerWindowMs` has passed (default 50 ms). */
  eagerPollMs?: number;
  /** How long after a notification to poll eagerly: the projector applies within it (default 1 s). */
  eagerWindowMs?: number;
  onReload?: (snapshot: RegistrySnapshot) => void;
  onError?: (err: unknown) => void;
}

/**
 * Keeps the gateway's registry snapshot within a second of the read model. An append notification
 * (`svc_events`) only says the projector is about to move, so it starts a short burst of cheap
 * revision polls; the plain poll covers a lost notification. The snapshot is swapped whole, so a
 * request holding one keeps a consistent view.
 */
export class RegistrySnapshotCache {
  private snapshot: RegistrySnapshot = EMPTY_REGISTRY;
  private readonly waker = new Waker();
  private readonly listener: NotificationListener;
  private eagerUntil = 0;
  private stopped = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    connectionString: string,
    private readonly options: RegistryCacheOptions = {},
  ) {
    this.listener = new NotificationListener(connectionString, NOTIFY_CHANNEL, () => {
      this.eagerUntil = Date.now() + (this.options.eagerWindowMs ?? 1_000);
      this.waker.notify();
    });
  }

  /** Loads the first snapshot (failing loudly if it cannot), then keeps it fresh in the background. */
  async start(): Promise<RegistrySnapshot> {
    await this.listener.ensure();
    this.swap(await loadRegistrySnapshot(this.pool));
    this.running ??= this.loop();
    return this.snapshot;
  }

  current(): RegistrySnapshot {
    return this.snapshot;
  }

  /** Reloads when the read model's revision moved; true when it did. */
  async refresh(): Promise<boolean> {
    if ((await registryRevision(this.pool)) === this.snapshot.revision) return false;
    this.swap(await loadRegistrySnapshot(this.pool));
    return true;
  }

  private swap(next: RegistrySnapshot): void {
    this.snapshot = next;
    this.options.onReload?.(next);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const eager = Date.now() < this.eagerUntil;
      await this.waker.sleep(eager ? (this.options.eagerPollMs ?? 50) : (this.options.pollMs ?? 500));
      if (this.stopped) break;
      await this.listener.ensure();
      try {
        await this.refresh();
      } catch (err) {
        // The previous snapshot keeps serving; the next poll tries again.
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
