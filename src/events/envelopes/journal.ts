import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestBegun } from './interrupted.js';
import { encodeSpoolLine, type SpoolRecord } from './spool.js';

/**
 * The gateway's request journal (SPEC 1.3, 2.5: a request that was answered is recorded; one whose
 * upstream call began is recorded even when its process dies). One per gateway process, under
 * `<data dir>/journal`, written with plain write(2) on the request path:
 *
 * - `begun(b)` when the upstream call is about to begin: `{"begun": {...}}`, a few hundred bytes;
 * - `completed(record)` when the request ends, before the last bytes of its reply are sent: the
 *   whole record (`completedLine`), superseding its begun line;
 * - `durable(id)` once the bus acknowledged the record or the spool fsynced it.
 *
 * No fsync: a line written is in the page cache, which survives the death of the process (kill -9,
 * OOM, a crash); what a machine crash can lose is in README "Durability". The file is split into
 * numbered segments. When a segment is full the next one opens with the begun lines of the
 * requests still in flight carried over, so the latest segment alone names every request in flight
 * (`journal-recovery.ts` reads begun lines from it only); an older segment is deleted once every
 * record in it is durable, and a clean stop deletes the last one.
 *
 * A journal belongs to its process (pid and start time in the file name); the next gateway started
 * on the data dir adopts the journals of processes that are gone (`adoptJournals`).
 */

/** Where the journals live under SVC_DATA_DIR. */
export const journalPath = (dataDir: string): string => join(dataDir, 'journal');

/** A journal's owner: a pid, and the process's start time in clock ticks since boot (0: unknown). */
export interface JournalOwner {
  pid: number;
  start: number;
}

/** The start time of a process (field 22 of /proc/<pid>/stat); null where there is no /proc. */
export const startTicksOf = (pid: number): number | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isSafeInteger(ticks) ? ticks : null;
  } catch {
    return null;
  }
};

export const SEGMENT_FILE = /^requests-(\d+)-(\d+)-(\d+)\.ndjson$/;
const segmentName = (owner: JournalOwner, seq: number) =>
  `requests-${owner.pid}-${owner.start}-${String(seq).padStart(6, '0')}.ndjson`;

export const begunLine = (b: RequestBegun): string => `{"begun":${JSON.stringify(b)}}\n`;

export interface RequestJournalOptions {
  dir: string;
  /** A segment is closed once it holds this many bytes (default 1 MiB). */
  maxSegmentBytes?: number;
  onError?: (err: unknown, context: string) => void;
}

/**
 * A record that is its envelope alone (no body chunks, the usual case) is journaled with the
 * envelope's JSON inline rather than escaped into a string: half the cost of a spool line.
 */
export const completedLine = (record: SpoolRecord): string => {
  const only = record.messages.length === 1 ? record.messages[0]! : undefined;
  if (!only || typeof only.data !== 'string') return encodeSpoolLine(record);
  const head = JSON.stringify({
    request_id: record.requestId,
    subject: only.subject,
    message_id: only.messageId,
  });
  return `{"completed":${head},"envelope":${only.data}}\n`;
};

const writeAll = (fd: number, text: string): number => {
  const length = Buffer.byteLength(text);
  const written = writeSync(fd, text);
  if (written < length) {
    const bytes = Buffer.from(text, 'utf8');
    for (let at = written; at < length; ) at += writeSync(fd, bytes, at, length - at);
  }
  return length;
};

export class RequestJournal {
  readonly owner: JournalOwner = { pid: process.pid, start: startTicksOf(process.pid) ?? 0 };
  private fd = -1;
  private seq = 0;
  private bytes = 0;
  /** Requests whose upstream call began and that have not ended: their begun lines. */
  private readonly inFlight = new Map<string, string>();
  /** Records written and not yet durable elsewhere, by request id: the segment holding each. */
  private readonly unsettled = new Map<string, number>();
  /** Segment -> its records not yet durable elsewhere. */
  private readonly counts = new Map<number, number>();
  private readonly maxSegmentBytes: number;

  private constructor(
    readonly dir: string,
    private readonly options: RequestJournalOptions,
  ) {
    this.maxSegmentBytes = options.maxSegmentBytes ?? 1024 * 1024;
  }

  static open(options: RequestJournalOptions): RequestJournal {
    mkdirSync(options.dir, { recursive: true });
    const journal = new RequestJournal(options.dir, options);
    if (!journal.rotate()) throw new Error(`the request journal cannot be written in ${options.dir}`);
    return journal;
  }

  /** The upstream call of a request is about to begin. */
  begun(b: RequestBegun): void {
    const line = begunLine(b);
    this.inFlight.set(b.request_id, line);
    if (this.write(line)) this.rotateIfFull();
  }

  /** The request ended: its record, written before the last bytes of its reply leave. */
  completed(record: SpoolRecord): void {
    const id = record.requestId;
    this.inFlight.delete(id);
    if (!this.write(completedLine(record))) return;
    this.unsettled.set(id, this.seq);
    this.counts.set(this.seq, (this.counts.get(this.seq) ?? 0) + 1);
    this.rotateIfFull();
  }

  /** The record is on the bus or in the spool: the journal no longer needs it. */
  durable(requestId: string): void {
    const seq = this.unsettled.get(requestId);
    if (seq === undefined) return;
    this.unsettled.delete(requestId);
    const left = (this.counts.get(seq) ?? 1) - 1;
    if (left > 0) {
      this.counts.set(seq, left);
      return;
    }
    this.counts.delete(seq);
    if (seq !== this.seq) this.remove(seq);
  }

  /** Records written and not yet durable elsewhere, and requests in flight. */
  get outstanding(): { records: number; inFlight: number } {
    return { records: this.unsettled.size, inFlight: this.inFlight.size };
  }

  /**
   * Closes the journal; deletes it when nothing in it is outstanding. Otherwise it stays for the
   * next start to adopt, which publishes its records and records its requests in flight as
   * interrupted.
   */
  close(): boolean {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    const clean = this.unsettled.size === 0 && this.inFlight.size === 0;
    if (clean) this.remove(this.seq);
    return clean;
  }

  private write(line: string): boolean {
    if (this.fd < 0 && !this.rotate()) return false;
    try {
      this.bytes += writeAll(this.fd, line);
      return true;
    } catch (err) {
      this.report(err, 'write the request journal');
      // A torn line must not glue onto the next one, and the segment must stop naming as in
      // flight a request that has ended: the next write starts a fresh segment.
      this.closeSegment();
      return false;
    }
  }

  private rotateIfFull(): void {
    if (this.bytes >= this.maxSegmentBytes) this.rotate();
  }

  /** Opens the next segment with the begun lines of the requests in flight; drops the last if done. */
  private rotate(): boolean {
    const previous = this.seq > 0 ? this.seq : null;
    this.closeSegment();
    const seq = this.seq + 1;
    let fd = -1;
    try {
      fd = openSync(join(this.dir, segmentName(this.owner, seq)), 'a');
      const carried = [...this.inFlight.values()].join('');
      this.bytes = carried ? writeAll(fd, carried) : 0;
    } catch (err) {
      this.report(err, 'open a request journal segment');
      if (fd >= 0) closeSync(fd);
      return false;
    }
    this.fd = fd;
    this.seq = seq;
    if (previous !== null && !this.counts.has(previous)) this.remove(previous);
    return true;
  }

  private closeSegment(): void {
    if (this.fd < 0) return;
    try {
      closeSync(this.fd);
    } catch {}
    this.fd = -1;
  }

  private remove(seq: number): void {
    try {
      rmSync(join(this.dir, segmentName(this.owner, seq)), { force: true });
    } catch (err) {
      this.report(err, 'remove a request journal segment');
    }
  }

  // A throwing log hook must not fail the request being recorded.
  private report(err: unknown, context: string): void {
    try {
      this.options.onError?.(err, context);
    } catch {}
  }
}
