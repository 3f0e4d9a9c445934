import { type Bus, BusUnavailableError } from '../bus.js';
import { SpoolDrainer } from './drain.js';
import type { RequestBegun } from './interrupted.js';
import { RequestJournal } from './journal.js';
import { type AdoptedJournals, adoptJournals } from './journal-recovery.js';
import { buildRequestRecord, type RecordBodies, type RequestCompletedDraft } from './record.js';
import { Spool, type SpoolRecord, spoolPath } from './spool.js';

export { buildBodyRef } from './body.js';

/**
 * Durable publication of request.completed (ARCHITECTURE.md "The request path").
 * `record` returns at once; the record goes to the bus in the background, body chunks first and the
 * envelope last under message id = request id. Records are micro-batched: whatever was recorded
 * within `lingerMs` (or `maxBatchRecords` of it) goes out in one `publishMany`, so a gateway makes
 * one bus write per batch rather than one per message. The in-memory queue is bounded; past it, and whenever the bus is unavailable, records are appended to the spool, and a
 * drainer republishes the spool in order once the bus answers. A batch the bus refuses for another
 * reason is retried record by record, so one bad record is spooled (and set aside) alone. Every message id is deterministic, so a record published twice (a crash mid-drain, a
 * late ack after shutdown spooled it) is dropped by the bus within its duplicate window, and
 * ingest dedupes by request_id beyond it.
 */

export interface RequestRecordPublisherOptions {
  bus: Bus;
  /** SVC_DATA_DIR; the spool lives in `<dataDir>/spool`. */
  dataDir: string;
  /** Batches published at the same time on the live path. */
  concurrency?: number;
  /** Records in one live batch at most; a partial batch goes after `lingerMs`. */
  maxBatchRecords?: number;
  /**
   * How long a partial batch waits for more records (0: the next event-loop turn). A publish is a
   * socket write, and a write costs 50-100 µs of CPU on this machine: at the default 5 ms a gateway
   * at 1,000 requests/s publishes one batch of about 5 instead of 5 batches of 1, and the wait
   * stays far below the bus's own latency. Records are never held past it; flush does not wait
   * for it, and close spools what it holds.
   */
  lingerMs?: number;
  /** Bytes in one live batch at most (a larger single record still goes, alone). */
  maxBatchBytes?: number;
  /** Past either bound, new records are spooled instead of held in memory. */
  maxQueuedRecords?: number;
  maxQueuedBytes?: number;
  /** Drain retry backoff: doubles from initialMs up to maxMs, with jitter. */
  retry?: { initialMs?: number; maxMs?: number };
  /** Refusals (errors other than BusUnavailableError) before a spooled record is set aside. */
  maxRecordAttempts?: number;
  /** How long `close` waits for in-flight publishes before spooling them as well. */
  closeTimeoutMs?: number;
  maxSegmentBytes?: number;
  /** Failures that were handled (spooled, retried, set aside); for logs. */
  onError?: (err: unknown, context: string) => void;
  /**
   * The request journal's folder (journal.ts): every record is written there before `record`
   * returns, and let go of once the bus acknowledged it or the spool fsynced it; journals of
   * processes that died on it are adopted at open. Absent: no journal (tests, tools).
   */
  journalDir?: string;
}

export interface PublisherStats {
  /** Records published on the live path. */
  published: number;
  /** Records appended to the spool. */
  spooled: number;
  /** Spooled records published by the drainer. */
  drained: number;
  /** Spooled records the bus kept refusing, moved to the spool's rejected file. */
  rejected: number;
  /** Spool lines that did not parse (a write torn by a crash), moved to the rejected file. */
  corrupt: number;
  /** Recorded and not yet on the bus: queued, in flight, being spooled, spooled or stranded. */
  pending: number;
  busUp: boolean;
}

interface Queued {
  record: SpoolRecord;
  bytes: number;
}

interface InFlight {
  batch: Queued[];
  /** Set when close() gave up waiting and spooled the batch; a late outcome is then ignored. */
  abandoned: boolean;
  done: Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class RequestRecordPublisher {
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private readonly inFlight = new Set<InFlight>();
  private readonly spoolWrites = new Set<Promise<void>>();
  private published = 0;
  private busUp = true;
  private closing = false;
  private closed: Promise<void> | undefined;
  private readonly drainer: SpoolDrainer;
  private readonly concurrency: number;
  private readonly maxBatchRecords: number;
  private readonly maxBatchBytes: number;
  private readonly lingerMs: number;
  private pumpScheduled = false;
  private readonly maxQueuedRecords: number;
  private readonly maxQueuedBytes: number;
  private journal: RequestJournal | null = null;
  /** What `open` adopted from the journals of processes that died on this data dir. */
  adopted: AdoptedJournals = { segments: 0, completed: 0, interrupted: 0, corrupt: 0 };

  private constructor(
    private readonly bus: Bus,
    private readonly spool: Spool,
    backlog: number,
    private readonly options: RequestRecordPublisherOptions,
  ) {
    this.concurrency = options.concurrency ?? 4;
    this.maxBatchRecords = Math.max(1, options.maxBatchRecords ?? 256);
    this.maxBatchBytes = options.maxBatchBytes ?? 4 * 1024 * 1024;
    this.lingerMs = options.lingerMs ?? 5;
    this.maxQueuedRecords = options.maxQueuedRecords ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
    this.drainer = new SpoolDrainer(
      spool,
      backlog,
      {
        publish: (record) => this.publish(record),
        busAnswered: (up) => {
          this.busUp = up;
        },
        report: (err, context) => this.report(err, context),
        durable: (record) => this.durable(record),
      },
      {
        retryInitialMs: options.retry?.initialMs ?? 100,
        retryMaxMs: options.retry?.maxMs ?? 10_000,
        maxRecordAttempts: options.maxRecordAttempts ?? 5,
      },
    );
  }

  /** Opens the spool and starts draining whatever a previous process left in it. */
  static async open(options: RequestRecordPublisherOptions): Promise<RequestRecordPublisher> {
    const spool = await Spool.open(spoolPath(options.dataDir), { maxSegmentBytes: options.maxSegmentBytes });
    const publisher = new RequestRecordPublisher(options.bus, spool, await spool.countPending(), options);
    if (options.journalDir !== undefined) {
      // Journals of processes that died on this data dir go to the spool before this one opens its own.
      publisher.adopted = await adoptJournals(options.journalDir, (found) => publisher.adopt(found));
      publisher.journal = RequestJournal.open({
        dir: options.journalDir,
        onError: (err, context) => publisher.report(err, context),
      });
    }
    if (publisher.drainer.backlog > 0) publisher.drainer.schedule(0);
    return publisher;
  }

  /** A request's upstream call is about to begin: journaled, so its process dying leaves a record. */
  begun(b: RequestBegun): void {
    this.journal?.begun(b);
  }

  /**
   * Hands the record over and returns, journaled first; throws only for a broken rule (closed
   * publisher, an id that is not a valid subject token), never because of the bus.
   */
  record(draft: RequestCompletedDraft, bodies?: RecordBodies): void {
    if (this.closing) throw new Error('request record publisher is closed');
    const { record, bytes } = buildRequestRecord(draft, bodies);
    this.journal?.completed(record);
    const full = this.queue.length >= this.maxQueuedRecords || this.queuedBytes + bytes > this.maxQueuedBytes;
    if (!this.busUp || full) {
      this.toSpool(record);
      return;
    }
    this.queue.push({ record, bytes });
    this.queuedBytes += bytes;
    if (this.queue.length >= this.maxBatchRecords || this.queuedBytes >= this.maxBatchBytes) this.pump();
    else this.pumpSoon();
  }

  /** Lets the records of the next `lingerMs` (or of the rest of this turn) join the batch. */
  private pumpSoon(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    const go = () => {
      this.pumpScheduled = false;
      this.pump();
    };
    if (this.lingerMs > 0) setTimeout(go, this.lingerMs).unref();
    else setImmediate(go);
  }

  pending(): number {
    let inFlight = 0;
    for (const f of this.inFlight) inFlight += f.batch.length;
    return (
      this.queue.length +
      inFlight +
      this.spoolWrites.size +
      this.drainer.backlog +
      this.drainer.stranded.length
    );
  }

  stats(): PublisherStats {
    const { spooled, drained, rejected, corrupt, publishedStranded } = this.drainer.counters;
    return {
      published: this.published + publishedStranded,
      spooled,
      drained,
      rejected,
      corrupt,
      pending: this.pending(),
      busUp: this.busUp,
    };
  }

  /** Resolves once everything recorded so far is on the bus or synced to the spool. */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight.size > 0 || this.spoolWrites.size > 0) {
      this.pump();
      await Promise.allSettled([...[...this.inFlight].map((f) => f.done), ...this.spoolWrites]);
    }
  }

  /**
   * Stops draining and makes everything recorded durable: queued records (at most `lingerMs` of
   * them while the bus keeps up) are spooled, in-flight publishes get `closeTimeoutMs` to finish
   * and are spooled otherwise. Records left in the spool are drained by the next process that
   * opens the same data dir.
   */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  private async shutdown(): Promise<void> {
    this.closing = true;
    const draining = this.drainer.stop();
    for (const q of this.queue.splice(0)) this.toSpool(q.record);
    this.queuedBytes = 0;
    const settled = Promise.allSettled([...this.inFlight].map((f) => f.done));
    await Promise.race([settled, sleep(this.options.closeTimeoutMs ?? 10_000)]);
    for (const f of this.inFlight) {
      f.abandoned = true;
      this.inFlight.delete(f);
      for (const q of f.batch) this.toSpool(q.record);
    }
    await draining;
    for (const record of this.drainer.stranded.splice(0)) this.toSpool(record);
    await Promise.allSettled([...this.spoolWrites]);
    await this.spool.close();
    // Everything it held is durable now; a journal with anything outstanding stays for the next start.
    if (this.journal && !this.journal.close())
      this.report(
        new Error(`request journal kept for the next start: ${JSON.stringify(this.journal.outstanding)}`),
        'close the request journal',
      );
    const lost = this.drainer.stranded.length;
    if (lost > 0) throw new Error(`${lost} request records could be neither published nor spooled`);
  }

  private pump(): void {
    while (this.inFlight.size < this.concurrency && this.queue.length > 0) {
      let size = 0;
      let bytes = 0;
      for (const q of this.queue) {
        if (size >= this.maxBatchRecords || (size > 0 && bytes + q.bytes > this.maxBatchBytes)) break;
        bytes += q.bytes;
        size++;
      }
      const batch = this.queue.splice(0, size);
      this.queuedBytes -= bytes;
      if (!this.busUp) {
        for (const q of batch) this.toSpool(q.record);
        continue;
      }
      const flight: InFlight = { batch, abandoned: false, done: Promise.resolve() };
      flight.done = this.bus.publishMany(batch.flatMap((q) => q.record.messages)).then(
        () => {
          if (flight.abandoned) return;
          this.inFlight.delete(flight);
          this.published += batch.length;
          for (const q of batch) this.durable(q.record);
          this.pump();
        },
        async (err: unknown) => {
          if (flight.abandoned) return;
          if (err instanceof BusUnavailableError) {
            this.inFlight.delete(flight);
            this.onUnavailable(batch, err);
          } else {
            // Refused: find the record the bus will not take by sending them one at a time.
            this.report(err, `publish a batch of ${batch.length}; retrying record by record`);
            await this.publishOneByOne(flight);
            this.inFlight.delete(flight);
          }
          this.pump();
        },
      );
      this.inFlight.add(flight);
    }
  }

  private async publishOneByOne(flight: InFlight): Promise<void> {
    for (const [i, q] of flight.batch.entries()) {
      if (flight.abandoned) return;
      try {
        await this.publish(q.record);
        if (!flight.abandoned) {
          this.published++;
          this.durable(q.record);
        }
      } catch (err) {
        if (flight.abandoned) return;
        if (err instanceof BusUnavailableError) {
          this.onUnavailable(flight.batch.slice(i), err);
          return;
        }
        this.report(err, `publish ${q.record.requestId}; spooled`);
        this.toSpool(q.record);
      }
    }
  }

  /** Everything behind a batch the bus did not answer would wait out the same timeout: spool it. */
  private onUnavailable(batch: Queued[], err: unknown): void {
    this.report(err, `publish ${batch.length} records; spooled`);
    this.busUp = false;
    for (const q of batch) this.toSpool(q.record);
    for (const q of this.queue.splice(0)) this.toSpool(q.record);
    this.queuedBytes = 0;
  }

  // A throwing log hook must not turn a handled failure into an unhandled rejection.
  private report(err: unknown, context: string): void {
    try {
      this.options.onError?.(err, context);
    } catch {}
  }

  /** One record (its chunks, then its envelope) in one batch publish. */
  private async publish(record: SpoolRecord): Promise<void> {
    await this.bus.publishMany(record.messages);
  }

  /**
   * Appends records another process left (its request journal, journal-recovery.ts) to the spool,
   * resolving once they are fsynced there; the drainer publishes them. Rejects when the spool
   * could not take them all.
   */
  async adopt(records: readonly SpoolRecord[]): Promise<void> {
    if (this.closing) throw new Error('request record publisher is closed');
    const appended = await Promise.allSettled(records.map((r) => this.spool.append(r)));
    for (const a of appended) if (a.status === 'fulfilled') this.drainer.spooled(this.busUp);
    const failed = appended.find((a) => a.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private durable(record: SpoolRecord): void {
    try {
      this.journal?.durable(record.requestId);
    } catch (err) {
      this.report(err, `release ${record.requestId} from the journal`);
    }
  }

  private toSpool(record: SpoolRecord): void {
    const write: Promise<void> = this.spool.append(record).then(
      () => {
        this.spoolWrites.delete(write);
        this.drainer.spooled(this.busUp);
        this.durable(record);
      },
      (err: unknown) => {
        this.spoolWrites.delete(write);
        this.report(err, `spool ${record.requestId}; kept in memory`);
        this.drainer.strand(record);
      },
    );
    this.spoolWrites.add(write);
  }
}
