import pg from 'pg';

/**
 * A LISTEN connection that calls `onNotify` for each notification on `channel` and reconnects
 * lazily after a loss. Callers keep polling as a fallback: a notification can be missed while the
 * connection is down, never an event.
 */
export class NotificationListener {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    private readonly onNotify: (payload: string | undefined) => void,
  ) {}

  get connected(): boolean {
    return this.client !== null;
  }

  /** Connects if not connected; never throws (the caller's poll covers a failure). */
  ensure(): Promise<void> {
    if (this.closed || this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 5_000 });
    client.on('error', () => {
      if (this.client === client) this.client = null;
    });
    client.on('end', () => {
      if (this.client === client) this.client = null;
    });
    client.on('notification', (msg) => {
      if (msg.channel === this.channel) this.onNotify(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
      if (this.closed) await client.end();
      else this.client = client;
    } catch {
      await client.end().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
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
