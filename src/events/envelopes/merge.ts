import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { journalPath, SEGMENT_FILE } from './journal.js';
import { ownerGone } from './journal-recovery.js';
import { REJECTED_FILE, SPOOL_SEGMENT, spoolPath, spoolSegmentName } from './spool.js';

const names = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
};

export type MergeResult = { merged: { journals: number; spoolSegments: number } } | { inUse: number };

/**
 * Moves the request records a gateway left in `from` (its journal segments and spool: records the
 * bus did not take) into `into`, whose next gateway adopts the journals and drains the spool as its
 * own, and removes `from`. For a worker slot that a smaller `svc serve --workers` no longer runs
 * (cli/workers.ts): without this its records would wait there for a worker that never comes.
 *
 * Refused (`inUse`, nothing moved) while a journal in `from` or `into` belongs to a live process
 * (a gateway always has one open): spool segments are renumbered after the highest one in `into`,
 * which only holds while nothing writes there.
 */
export const mergeRecordDirs = (from: string, into: string): MergeResult => {
  const journals = names(journalPath(from)).flatMap((name) => {
    const m = SEGMENT_FILE.exec(name);
    return m ? [{ name, pid: Number(m[1]), start: Number(m[2]) }] : [];
  });
  const liveIn = (dir: string) =>
    names(journalPath(dir)).filter((name) => {
      const m = SEGMENT_FILE.exec(name);
      return m !== null && !ownerGone(Number(m[1]), Number(m[2]));
    }).length;
  const live = liveIn(from) + liveIn(into);
  if (live > 0) return { inUse: live };
  mkdirSync(journalPath(into), { recursive: true });
  for (const j of journals) renameSync(join(journalPath(from), j.name), join(journalPath(into), j.name));

  const spoolFrom = spoolPath(from);
  const spoolInto = spoolPath(into);
  mkdirSync(spoolInto, { recursive: true });
  // A segment's `.acked` checkpoint (lines already delivered) goes with it; numbering starts past
  // every segment and checkpoint there, so no segment takes over a stray checkpoint.
  const seqOf = (name: string) => Number(SPOOL_SEGMENT.exec(name.replace(/\.acked$/, ''))?.[1] ?? Number.NaN);
  let next = Math.max(0, ...names(spoolInto).map(seqOf).filter(Number.isFinite)) + 1;
  const present = new Set(names(spoolFrom));
  const segments = [...present].filter((n) => SPOOL_SEGMENT.test(n)).sort((a, b) => seqOf(a) - seqOf(b));
  for (const name of segments) {
    const to = spoolSegmentName(next++);
    renameSync(join(spoolFrom, name), join(spoolInto, to));
    if (present.has(`${name}.acked`))
      renameSync(join(spoolFrom, `${name}.acked`), join(spoolInto, `${to}.acked`));
  }
  // Lines no drain could deliver are kept for an operator, with the rest of the slot's.
  const rejected = names(spoolFrom).includes(REJECTED_FILE)
    ? readFileSync(join(spoolFrom, REJECTED_FILE))
    : null;
  if (rejected && rejected.length > 0) appendFileSync(join(spoolInto, REJECTED_FILE), rejected);
  rmSync(from, { recursive: true, force: true });
  return { merged: { journals: journals.length, spoolSegments: segments.length } };
};
