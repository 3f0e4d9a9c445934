import { BusUnavailableError } from '../bus.js';
import type { Spool, SpoolRecord, SpoolSegment } from './spool.js';

/**
 * Republishes the spool to the bus, oldest segment first and record by record, deleting a segment
 * once every line in it was delivered or set aside. Progress is checkpointed every
 * CHECKPOINT_EVERY lines, so a crash mid-drain resends at most that many records, which the bus
 * drops by message id.
 */

export interface DrainerHooks {
  publish(record: SpoolRecord): Promise<void>;
  /** The bus took a record, or refused one with BusUnavailableError. */
  busAnswered(up: boolean): void;
  report(err: unknown, context: string): void;
  /** A stranded record reached the spool or the bus at last. */
  durable?(record: SpoolRecord): void;
}

export interface DrainerOptions {
  retryInitialMs: number;
  retryMaxMs: number;
  /** Refusals (errors other than BusUnavailableError) before a record is set aside. */
  maxRecordAttempts: number;
}

/** Spooled lines delivered between checkpoint writes: the most a crash makes the drainer resend. */
export const CHECKPOINT_EVERY = 100;

type PassOutcome = 'done' | 'failed' | 'stopped';

export class SpoolDrainer {
  readonly counters = { spooled: 0, drained: 0, rejected: 0, corrupt: 0, publishedStranded: 0 };
  /** Records synced to the spool and not yet delivered or set aside. */
  backlog: number;
  /** Records neither the spool nor the bus took (the disk failed too); retried before each pass. */
  readonly stranded: SpoolRecord[] = [];
  private readonly refusals = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failures = 0;
  private stopped = false;

  constructor(
    private readonly spool: Spool,
    backlog: number,
    private readonly hooks: DrainerHooks,
    private readonly options: DrainerOptions,
  ) {
    this.backlog = backlog;
  }

  /** A record reached the spool; drain now when the bus is believed up, else after the backoff. */
  spooled(busUp: boolean): void {
    this.backlog++;
    this.counters.spooled++;
    this.schedule(busUp ? 0 : this.backoffMs());
  }

  strand(record: SpoolRecord): void {
    this.stranded.push(record);
    this.schedule(this.backoffMs());
  }

  schedule(delayMs: number): void {
    if (this.stopped || this.running || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass().then(
        (outcome) => this.settle(outcome),
        (err: unknown) => {
          this.hooks.report(err, 'drain');
          this.settle('failed');
        },
      );
    }, delayMs);
    this.timer.unref();
  }

  /** Stops after the record being published; the spool keeps the rest for the next process. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private settle(outcome: PassOutcome): void {
    this.running = undefined;
    if (outcome === 'failed') {
      this.failures++;
      this.schedule(this.backoffMs());
    } else if (this.backlog > 0 || this.stranded.length > 0) {
      this.schedule(0);
    }
  }

  private backoffMs(): number {
    const { retryInitialMs, retryMaxMs } = this.options;
    const ceiling = Math.min(retryMaxMs, retryInitialMs * 2 ** Math.min(this.failures, 30));
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  private async pass(): Promise<PassOutcome> {
    if (!(await this.retryStranded())) return 'failed';
    for (;;) {
      if (this.stopped) return 'stopped';
      const segments = await this.spool.segments();
      if (segments.length === 0) {
        if (!this.spool.hasUnsealed) return 'done';
        // Sealed only when everything older is drained, so an outage does not split the spool
        // into a segment per retry.
        await this.spool.seal();
        continue;
      }
      for (const segment of segments) {
        const outcome = await this.drainSegment(segment);
        if (outcome !== 'done') return outcome;
      }
    }
  }

  private async drainSegment(segment: SpoolSegment): Promise<PassOutcome> {
    let delivered = await this.spool.checkpoint(segment);
    let unsaved = 0;
    const save = async () => {
      if (unsaved > 0) await this.spool.saveCheckpoint(segment, delivered);
      unsaved = 0;
    };
    const consumed = async (line: number) => {
      delivered = line + 1;
      this.backlog = Math.max(0, this.backlog - 1);
      if (++unsaved >= CHECKPOINT_EVERY) await save();
    };
    for await (const entry of this.spool.read(segment, delivered)) {
      if (this.stopped) {
        await save();
        return 'stopped';
      }
      if (!entry.record) {
        this.counters.corrupt++;
        this.hooks.report(new Error('unparsable spool line'), `drain ${segment.path}:${entry.line}`);
        await this.spool.reject(entry.raw);
        await consumed(entry.line);
        continue;
      }
      try {
        await this.hooks.publish(entry.record);
      } catch (err) {
        if (await this.refused(segment, entry.line, entry.raw, err)) {
          await consumed(entry.line);
          continue;
        }
        await save();
        return 'failed';
      }
      this.hooks.busAnswered(true);
      this.failures = 0;
      this.counters.drained++;
      await consumed(entry.line);
    }
    await this.spool.remove(segment);
    return 'done';
  }

  /**
   * True when the record was set aside: the bus answered but kept refusing it, and retrying it
   * forever would hold back every record behind it.
   */
  private async refused(segment: SpoolSegment, line: number, raw: string, err: unknown): Promise<boolean> {
    this.hooks.report(err, `drain ${segment.path}:${line}`);
    if (err instanceof BusUnavailableError) {
      this.hooks.busAnswered(false);
      return false;
    }
    const key = `${segment.seq}:${line}`;
    const attempts = (this.refusals.get(key) ?? 0) + 1;
    this.refusals.set(key, attempts);
    if (attempts < this.options.maxRecordAttempts) return false;
    this.refusals.delete(key);
    await this.spool.reject(raw);
    this.counters.rejected++;
    return true;
  }

  /** False while some stranded record is still neither spooled nor published. */
  private async retryStranded(): Promise<boolean> {
    while (this.stranded.length > 0) {
      const record = this.stranded[0]!;
      try {
        await this.spool.append(record);
        this.backlog++;
        this.counters.spooled++;
      } catch {
        try {
          await this.hooks.publish(record);
          this.counters.publishedStranded++;
        } catch {
          return false;
        }
      }
      this.stranded.shift();
      this.hooks.durable?.(record);
    }
    return true;
  }
}
