import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { processAlive } from '../postgres/embedded-lifetime.js';
import { interruptedDraft, type RequestBegun, requestBegunSchema } from './interrupted.js';
import { SEGMENT_FILE, startTicksOf } from './journal.js';
import { buildRequestRecord } from './record.js';
import { decodeSpoolLine, type SpoolRecord } from './spool.js';

/**
 * Adoption of the request journals (journal.ts) of gateway processes that are gone: every record
 * in them is published again, and every request of the latest segment that began and did not end
 * is recorded as interrupted (interrupted.ts). Publishing again is safe: the bus drops a message id
 * it has seen within its duplicate window, ingest stores one row per request id beyond it
 * (ReplacingMergeTree), and settlement appends one charge per request id (SPEC 6).
 */

export interface AdoptedJournals {
  segments: number;
  /** Records published again. */
  completed: number;
  /** Requests recorded as interrupted. */
  interrupted: number;
  /** Lines that did not parse (a write torn by a machine crash, or damage); skipped. */
  corrupt: number;
}

interface Segment {
  path: string;
  pid: number;
  start: number;
  seq: number;
}

/** Gone, or a previous life of this pid (a container restarted under the same pid). */
export const ownerGone = (pid: number, start: number): boolean => {
  if (pid === process.pid) return start !== (startTicksOf(pid) ?? 0) || start === 0;
  if (!processAlive(pid)) return true;
  const now = startTicksOf(pid);
  return now !== null && start !== 0 && now !== start;
};

const orphanSegments = (dir: string): Segment[] => {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .flatMap((name) => {
      const m = SEGMENT_FILE.exec(name);
      return m ? [{ path: join(dir, name), pid: Number(m[1]), start: Number(m[2]), seq: Number(m[3]) }] : [];
    })
    .filter((s) => ownerGone(s.pid, s.start))
    .sort((a, b) => a.pid - b.pid || a.start - b.start || a.seq - b.seq);
};

const completedSchema = z.object({
  completed: z.object({ request_id: z.string(), subject: z.string(), message_id: z.string() }),
  envelope: z.record(z.string(), z.unknown()),
});

/** A line of `completedLine` back to its record; undefined when it does not parse. */
const decodeCompleted = (raw: string): SpoolRecord | undefined => {
  let parsed: ReturnType<typeof completedSchema.safeParse>;
  try {
    parsed = completedSchema.safeParse(JSON.parse(raw));
  } catch {
    return undefined;
  }
  if (!parsed.success) return undefined;
  const { completed, envelope } = parsed.data;
  // Published again under the same message id: the bus and ingest tell copies apart by id, not bytes.
  return {
    requestId: completed.request_id,
    messages: [
      { subject: completed.subject, messageId: completed.message_id, data: JSON.stringify(envelope) },
    ],
  };
};

/** The records one segment yields: its completed records, and (latest only) its interrupted ones. */
const readSegment = (
  path: string,
  latest: boolean,
): { records: SpoolRecord[]; completed: number; interrupted: number; corrupt: number } => {
  const text = readFileSync(path, 'utf8');
  const endedBy = statSync(path).mtime;
  const records: SpoolRecord[] = [];
  const begun = new Map<string, RequestBegun>();
  const ended = new Set<string>();
  let corrupt = 0;
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    if (raw.startsWith('{"begun":')) {
      let parsed: ReturnType<typeof requestBegunSchema.safeParse> | undefined;
      try {
        parsed = requestBegunSchema.safeParse((JSON.parse(raw) as { begun: unknown }).begun);
      } catch {}
      if (parsed?.success) begun.set(parsed.data.request_id, parsed.data);
      else corrupt++;
      continue;
    }
    const record = raw.startsWith('{"completed":') ? decodeCompleted(raw) : decodeSpoolLine(raw);
    if (!record) {
      corrupt++;
      continue;
    }
    ended.add(record.requestId);
    records.push(record);
  }
  const completed = records.length;
  if (latest)
    for (const [id, b] of begun)
      if (!ended.has(id)) records.push(buildRequestRecord(interruptedDraft(b, endedBy)).record);
  return { records, completed, interrupted: records.length - completed, corrupt };
};

/**
 * Adopts the journals under `dir` whose processes are gone, one segment at a time: `take` must make
 * the records durable (the spool fsyncs them) before the segment is deleted; when it throws, the
 * segment stays for the next start.
 */
export const adoptJournals = async (
  dir: string,
  take: (records: SpoolRecord[]) => Promise<void>,
): Promise<AdoptedJournals> => {
  const adopted: AdoptedJournals = { segments: 0, completed: 0, interrupted: 0, corrupt: 0 };
  const segments = orphanSegments(dir);
  for (const [i, s] of segments.entries()) {
    const next = segments[i + 1];
    const latest = !next || next.pid !== s.pid || next.start !== s.start;
    let read: ReturnType<typeof readSegment>;
    try {
      read = readSegment(s.path, latest);
    } catch (err) {
      // Adopted meanwhile by another gateway starting on the same data dir.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    if (read.records.length > 0) await take(read.records);
    rmSync(s.path, { force: true });
    adopted.segments++;
    adopted.completed += read.completed;
    adopted.interrupted += read.interrupted;
    adopted.corrupt += read.corrupt;
  }
  return adopted;
};
