import pg from 'pg';

/**
 * One LISTEN connection per (database, channel) in a process, shared by every listener on it: the
 * projectors, the snapshot caches and the subscriptions of a `svc serve` would otherwise hold a
 * connection each. It reconnects lazily after a loss; callers keep polling as a fallback, so a
 * notification can be missed while the connection is down, never an event.
 */
class Hub {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  readonly listeners = new Set<(payload: string | undefined) => void>();

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
  ) {}

  get connected(): boolean {
    return this.client !== null;
  }

  ensure(): Promise<void> {
    if (this.client || this.listeners.size === 0) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    // Named like every svc session: the embedded server's last user is told by it (embedded-lifetime.ts).
    const client = new pg.Client({
      connectionString: this.connectionString,
      connectionTimeoutMillis: 5_000,
      application_name: 'svc-listen',
    });
    const lost = () => {
      if (this.client === client) this.client = null;
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (msg) => {
      if (msg.channel !== this.channel) return;
      for (const listener of this.listeners) listener(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
      if (this.listeners.size === 0) await client.end();
      else this.client = client;
    } catch {
      await client.end().catch(() => {});
    }
  }

  async release(): Promise<void> {
    if (this.listeners.size > 0) return;
    await this.connecting;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}

const hubs = new Map<string, Hub>();

export class NotificationListener {
  private readonly hub: Hub;
  private readonly key: string;
  private closed = false;
  private readonly deliver: (payload: string | undefined) => void;

  constructor(connectionString: string, channel: string, onNotify: (payload: string | undefined) => void) {
    this.key = `${channel}\u0000${connectionString}`;
    let hub = hubs.get(this.key);
    if (!hub) {
      hub = new Hub(connectionString, channel);
      hubs.set(this.key, hub);
    }
    this.hub = hub;
    this.deliver = (payload) => onNotify(payload);
    hub.listeners.add(this.deliver);
  }

  get connected(): boolean {
    return this.hub.connected;
  }

  /** Connects if not connected; never throws (the caller's poll covers a failure). */
  ensure(): Promise<void> {
    return this.closed ? Promise.resolve() : this.hub.ensure();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.hub.listeners.delete(this.deliver);
    if (this.hub.listeners.size === 0 && hubs.get(this.key) === this.hub) hubs.delete(this.key);
    await this.hub.release();
  }
}

/** A sleep that a notification (or close) can cut short. */
export class Waker {
  private wake: (() => void) | null = null;
  private pending = false;

  notify = (): void => {
    if (this.wake) this.wake();
    else this.pending = true;
  };

  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }
}
