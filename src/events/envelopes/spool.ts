import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { OutboundMessage } from './body.js';

/**
 * The request-record spool (ARCHITECTURE.md "The request path"): an append-only NDJSON log of
 * records the bus did not take, one line per record (its body chunks and envelope, in publish
 * order), split into numbered segments so a drained segment can be deleted while new records land
 * in the next one. Lines are fsynced in groups before `append` resolves. One process owns a spool
 * directory; two gateways must not share a data dir.
 */

/** Where the spool lives under SVC_DATA_DIR. */
export const spoolPath = (dataDir: string): string => join(dataDir, 'spool');

export interface SpoolRecord {
  requestId: string;
  messages: OutboundMessage[];
}

export interface SpoolSegment {
  seq: number;
  path: string;
}

export interface SpoolEntry {
  /** 0-based line number within the segment. */
  line: number;
  /** Undefined when the line does not parse: a write torn by a crash, or damage. */
  record: SpoolRecord | undefined;
  raw: string;
}

export const SPOOL_SEGMENT = /^requests-(\d{12})\.ndjson$/;
export const spoolSegmentName = (seq: number) => `requests-${String(seq).padStart(12, '0')}.ndjson`;
/** Lines the drainer could not deliver or parse, kept byte for byte for an operator to inspect. */
export const REJECTED_FILE = 'requests-rejected.ndjson';

const lineSchema = z.object({
  v: z.literal(1),
  request_id: z.string(),
  messages: z.array(
    z.object({
      subject: z.string(),
      message_id: z.string(),
      encoding: z.enum(['utf8', 'base64']),
      data: z.string(),
    }),
  ),
});

export const encodeSpoolLine = (record: SpoolRecord): string =>
  `${JSON.stringify({
    v: 1,
    request_id: record.requestId,
    messages: record.messages.map((m) =>
      typeof m.data === 'string'
        ? { subject: m.subject, message_id: m.messageId, encoding: 'utf8', data: m.data }
        : {
            subject: m.subject,
            message_id: m.messageId,
            encoding: 'base64',
            data: Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString('base64'),
          },
    ),
  })}\n`;

export const decodeSpoolLine = (raw: string): SpoolRecord | undefined => {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = lineSchema.safeParse(json);
  if (!parsed.success) return undefined;
  return {
    requestId: parsed.data.request_id,
    messages: parsed.data.messages.map((m) => ({
      subject: m.subject,
      messageId: m.message_id,
      data: m.encoding === 'utf8' ? m.data : Buffer.from(m.data, 'base64'),
    })),
  };
};

/** A line to write, or a request to close the open segment once every line before it is synced. */
type Waiter =
  | { kind: 'line'; line: string; resolve: () => void; reject: (err: unknown) => void }
  | { kind: 'seal'; resolve: () => void };

const syncDirectory = async (dir: string): Promise<void> => {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
};

const countLines = async (path: string): Promise<number> => {
  let lines = 0;
  let last = 0x0a;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) lines++;
    if (chunk.length > 0) last = chunk[chunk.length - 1]!;
  }
  // A torn final line still occupies a line the drainer will read (and reject).
  return last === 0x0a ? lines : lines + 1;
};

export interface SpoolOptions {
  /** A segment is closed for draining once it reaches this size. */
  maxSegmentBytes?: number;
  /** Most lines one fsync covers; more waiting lines go in the next group. */
  maxGroupLines?: number;
}

const MAX_GROUP_BYTES = 4 * 1024 * 1024;

export class Spool {
  private nextSeq: number;
  private active: { seq: number; handle: FileHandle; bytes: number } | undefined;
  private unsealedSeq: number | undefined;
  private waiting: Waiter[] = [];
  private writing: Promise<void> | undefined;
  private closed = false;
  private readonly maxSegmentBytes: number;
  private readonly maxGroupLines: number;

  private constructor(
    readonly dir: string,
    lastSeq: number,
    options: SpoolOptions,
  ) {
    this.nextSeq = lastSeq + 1;
    this.maxSegmentBytes = options.maxSegmentBytes ?? 64 * 1024 * 1024;
    this.maxGroupLines = options.maxGroupLines ?? 256;
  }

  static async open(dir: string, options: SpoolOptions = {}): Promise<Spool> {
    await mkdir(dir, { recursive: true });
    const existing = await Spool.list(dir);
    // A checkpoint without its segment (older builds, manual cleanup) would otherwise apply to the
    // next segment given the same number and skip its first lines.
    const live = new Set(existing.map((s) => `${s.path}.acked`));
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      if (name.endsWith('.acked') && !live.has(path)) await rm(path, { force: true });
    }
    return new Spool(dir, existing.at(-1)?.seq ?? 0, options);
  }

  private static async list(dir: string): Promise<SpoolSegment[]> {
    const names = await readdir(dir);
    return names
      .flatMap((name) => {
        const m = SPOOL_SEGMENT.exec(name);
        return m ? [{ seq: Number(m[1]), path: join(dir, name) }] : [];
      })
      .sort((a, b) => a.seq - b.seq);
  }

  /** Resolves once the line is fsynced; rejects when it could not be written. */
  append(record: SpoolRecord): Promise<void> {
    if (this.closed) return Promise.reject(new Error('spool is closed'));
    const line = encodeSpoolLine(record);
    return new Promise((resolve, reject) => {
      this.waiting.push({ kind: 'line', line, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.writing || this.waiting.length === 0) return;
    this.writing = this.writeGroups().finally(() => {
      this.writing = undefined;
      this.kick();
    });
  }

  // Seals travel in the same queue as lines, so a seal closes exactly the lines appended before it
  // and cannot starve behind a steady stream of appends.
  private async writeGroups(): Promise<void> {
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      if (next.kind === 'seal') {
        this.waiting.shift();
        await this.closeActive().catch(() => {});
        next.resolve();
        continue;
      }
      // A group never runs far past the segment size, so segments stay near it and drain in pieces.
      const byteBudget = Math.min(this.maxSegmentBytes, MAX_GROUP_BYTES);
      let size = 0;
      let bytes = 0;
      for (let w = this.waiting[0]; w?.kind === 'line'; w = this.waiting[size]) {
        if (size >= this.maxGroupLines || (size > 0 && bytes >= byteBudget)) break;
        bytes += w.line.length;
        size++;
      }
      const group = this.waiting.splice(0, size).flatMap((w) => (w.kind === 'line' ? [w] : []));
      await this.writeGroup(group);
    }
  }

  private async writeGroup(group: Extract<Waiter, { kind: 'line' }>[]): Promise<void> {
    try {
      const segment = await this.activeSegment();
      const bytes = Buffer.from(group.map((w) => w.line).join(''), 'utf8');
      for (let at = 0; at < bytes.length; ) {
        const { bytesWritten } = await segment.handle.write(bytes, at, bytes.length - at);
        at += bytesWritten;
      }
      await segment.handle.datasync();
      segment.bytes += bytes.length;
      for (const w of group) w.resolve();
      if (segment.bytes >= this.maxSegmentBytes) await this.closeActive();
    } catch (err) {
      for (const w of group) w.reject(err);
      // A failed write may have left part of a line; the next group starts a fresh segment
      // instead of gluing its first line onto the torn one.
      await this.closeActive().catch(() => {});
    }
  }

  private async activeSegment() {
    if (this.active) return this.active;
    const seq = this.nextSeq++;
    // Claimed before the file exists, so a drainer listing the directory meanwhile never takes
    // (and deletes) a segment that is about to be written.
    this.unsealedSeq = seq;
    try {
      const handle = await open(join(this.dir, spoolSegmentName(seq)), 'a');
      this.active = { seq, handle, bytes: 0 };
    } catch (err) {
      this.unsealedSeq = undefined;
      throw err;
    }
    await syncDirectory(this.dir);
    return this.active;
  }

  private async closeActive(): Promise<void> {
    const active = this.active;
    this.active = undefined;
    try {
      await active?.handle.close();
    } finally {
      this.unsealedSeq = undefined;
    }
  }

  /** Lines are waiting to be written, or the open segment holds some. */
  get hasUnsealed(): boolean {
    return (
      this.writing !== undefined ||
      this.waiting.some((w) => w.kind === 'line') ||
      (this.active?.bytes ?? 0) > 0
    );
  }

  /** Closes the open segment after every line appended so far is synced, so the drainer may take it. */
  seal(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push({ kind: 'seal', resolve });
      this.kick();
    });
  }

  /** Segments ready to drain, oldest first: every segment but the one being written. */
  async segments(): Promise<SpoolSegment[]> {
    const all = await Spool.list(this.dir);
    return all.filter((s) => s.seq !== this.unsealedSeq);
  }

  /** Records in sealed and open segments not yet acknowledged through a checkpoint. */
  async countPending(): Promise<number> {
    let total = 0;
    for (const s of await Spool.list(this.dir))
      total += Math.max(0, (await countLines(s.path)) - (await this.checkpoint(s)));
    return total;
  }

  async *read(segment: SpoolSegment, skip: number): AsyncGenerator<SpoolEntry> {
    const stream = createReadStream(segment.path, { encoding: 'utf8' });
    const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
    let line = 0;
    try {
      for await (const raw of lines) {
        if (line >= skip) yield { line, record: decodeSpoolLine(raw), raw };
        line++;
      }
    } finally {
      lines.close();
      stream.destroy();
    }
  }

  /**
   * Lines of the segment already delivered. Written without fsync: a lost checkpoint only makes
   * the drainer publish those records again, and the bus drops them by message id.
   */
  async checkpoint(segment: SpoolSegment): Promise<number> {
    try {
      const n = Number.parseInt(await readFile(`${segment.path}.acked`, 'utf8'), 10);
      return Number.isSafeInteger(n) && n > 0 ? n : 0;
    } catch {
      return 0;
    }
  }

  async saveCheckpoint(segment: SpoolSegment, lines: number): Promise<void> {
    await writeFile(`${segment.path}.acked`, String(lines));
  }

  /**
   * Only after every line of the segment was delivered or set aside. The checkpoint goes first: a
   * crash in between then costs duplicates, never a checkpoint outliving its segment.
   */
  async remove(segment: SpoolSegment): Promise<void> {
    await rm(`${segment.path}.acked`, { force: true });
    await rm(segment.path, { force: true });
  }

  async reject(raw: string): Promise<void> {
    const handle = await open(join(this.dir, REJECTED_FILE), 'a');
    try {
      await handle.write(raw.endsWith('\n') ? raw : `${raw}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.seal();
  }
}
