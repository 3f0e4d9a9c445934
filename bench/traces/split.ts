import { readdir, readFile } from 'node:fs/promises';
import { parseProcStatFull, processTree } from '../lib/proc.js';

/**
 * The two node processes of `svc serve` apart: the serving process (the trace-ingest route:
 * decode, normalize, publish) and its data process (ingest and the trace projector, and chdb's
 * engine threads), so the table can say which side the CPU per span goes to. PostgreSQL is
 * counted by meterTree (bench/lib/proc.ts).
 */

/** CPU seconds by thread name ('main' for the process's own thread), so far. */
export type ThreadCpu = Map<string, number>;

export interface SplitReading {
  serveThreads: ThreadCpu;
  dataThreads: ThreadCpu;
  /** CPU seconds so far (own threads, plus children reaped), by process. */
  serve: number;
  data: number;
  /** VmHWM (peak resident set) in MB, by process. */
  serveHwmMb: number;
  dataHwmMb: number;
  dataPid: number | null;
}

const cmdline = (pid: number) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');

const cpuOf = async (pid: number | null): Promise<number> => {
  if (pid === null) return 0;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return 0;
  const s = parseProcStatFull(stat);
  return s.cpuSeconds;
};

const hwmOf = async (pid: number | null): Promise<number> => {
  if (pid === null) return 0;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  return kb === undefined ? 0 : Number(kb) / 1024;
};

/** The data process: the tree's node process started with --data-process. */
export const dataProcessOf = async (servePid: number): Promise<number | null> => {
  for (const pid of (await processTree(servePid)).keys())
    if (pid !== servePid && (await cmdline(pid)).split('\0').includes('--data-process')) return pid;
  return null;
};

/**
 * CPU by thread name of one process: V8's GC helpers, libuv's pool, worker threads, and the
 * embedded engine's own pools, which a V8 CPU profile does not see.
 */
const threadsOf = async (pid: number | null): Promise<ThreadCpu> => {
  const out: ThreadCpu = new Map();
  if (pid === null) return out;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const s = parseProcStatFull(stat);
    const key = tid === String(pid) ? 'main' : s.name;
    out.set(key, (out.get(key) ?? 0) + s.cpuSeconds);
  }
  return out;
};

/** Per thread name, CPU seconds between two readings, largest first. */
export const threadsSince = (before: ThreadCpu, after: ThreadCpu): [string, number][] =>
  [...after]
    .map(([name, s]): [string, number] => [name, s - (before.get(name) ?? 0)])
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1]);

export const readSplit = async (servePid: number, dataPid: number | null): Promise<SplitReading> => ({
  serveThreads: await threadsOf(servePid),
  dataThreads: await threadsOf(dataPid),
  serve: await cpuOf(servePid),
  data: await cpuOf(dataPid),
  serveHwmMb: await hwmOf(servePid),
  dataHwmMb: await hwmOf(dataPid),
  dataPid,
});
