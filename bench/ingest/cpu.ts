import { readdir, readFile } from 'node:fs/promises';
import type { Pool } from '../../src/events/postgres/pool.js';
import { parseProcStat } from '../lib/proc.js';

/** CPU seconds by label; a reading minus an earlier one is the CPU spent in between. */
export type CpuReading = Map<string, number>;

const statOf = async (path: string): Promise<{ name: string; cpuSeconds: number } | null> => {
  const stat = await readFile(path, 'utf8').catch(() => '');
  return stat ? parseProcStat(stat) : null;
};

/**
 * CPU seconds used so far by each thread of this process: the main thread under 'main', the
 * others under their names (V8's GC and compiler workers, libuv, chdb's engine pools).
 */
export const threadCpu = async (): Promise<CpuReading> => {
  const byName: CpuReading = new Map();
  for (const tid of await readdir('/proc/self/task')) {
    const s = await statOf(`/proc/self/task/${tid}/stat`);
    if (!s) continue; // the thread ended since the listing
    const key = tid === String(process.pid) ? 'main' : s.name;
    byName.set(key, (byName.get(key) ?? 0) + s.cpuSeconds);
  }
  return byName;
};

/**
 * CPU seconds of the PostgreSQL backends serving one database, by application name, leaving out
 * the publisher's: the server's share of ingest (lease, ack, settle, publish of audit events). A
 * backend that exits inside the window is missed; the bench's pools keep theirs open throughout.
 */
export const backendCpu = async (pool: Pool, database: string, leaveOut: string): Promise<CpuReading> => {
  const { rows } = await pool.query<{ pid: number; app: string }>(
    'SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2',
    [database, leaveOut],
  );
  const byPid: CpuReading = new Map();
  for (const r of rows) {
    const s = await statOf(`/proc/${r.pid}/stat`);
    if (s) byPid.set(`${r.app}#${r.pid}`, s.cpuSeconds);
  }
  return byPid;
};

/** CPU seconds of the processes whose command line holds `needle` (a private nats-server's store dir). */
export const processCpu = async (needle: string): Promise<CpuReading> => {
  const out: CpuReading = new Map();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(needle)) continue;
    const s = await statOf(`/proc/${pid}/stat`);
    if (s) out.set(`${s.name}#${pid}`, s.cpuSeconds);
  }
  return out;
};

/** Per label, CPU seconds between two readings (a label new in `after` counts from zero), largest first. */
export const cpuSince = (before: CpuReading, after: CpuReading): [string, number][] =>
  [...after]
    .map(([name, s]): [string, number] => [name, s - (before.get(name) ?? 0)])
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1]);

export const total = (entries: [string, number][]): number => entries.reduce((n, [, s]) => n + s, 0);
