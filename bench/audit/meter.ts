import { readFile } from 'node:fs/promises';
import type { Pool } from '../../src/events/postgres/pool.js';
import { backendCpu, type CpuReading, cpuSince, processCpu, threadCpu, total } from '../ingest/cpu.js';
import { parseProcStat } from '../lib/proc.js';

/**
 * CPU over one phase of the bench: this process (every thread, from /proc/self/stat) and its main
 * thread, the PostgreSQL backends of the bench database (bench/ingest/cpu.ts backendCpu: a backend
 * that exits inside the window is missed; the pools keep theirs open 30 s), and the JetStream
 * server when it is on this machine (it is shared: its figure holds whatever else it served).
 */

export interface CpuWindow {
  processSeconds: number;
  mainSeconds: number;
  postgresSeconds: number;
  natsSeconds: number | null;
}

interface Reading {
  process: number;
  threads: CpuReading;
  postgres: CpuReading;
  nats: CpuReading | null;
}

export interface CpuMeterOptions {
  pool: Pool;
  database: string;
  /** application_name whose backends are left out (the publisher's). */
  leaveOut: string;
  /** A string only the JetStream server's command line holds, or null for no JetStream. */
  natsNeedle: string | null;
}

const processSeconds = async () => parseProcStat(await readFile('/proc/self/stat', 'utf8')).cpuSeconds;

export const cpuMeter = (o: CpuMeterOptions) => {
  const read = async (): Promise<Reading> => ({
    process: await processSeconds(),
    threads: await threadCpu(),
    postgres: await backendCpu(o.pool, o.database, o.leaveOut),
    nats: o.natsNeedle === null ? null : await processCpu(o.natsNeedle),
  });
  return {
    start: read,
    since: async (before: Reading): Promise<CpuWindow> => {
      const after = await read();
      const natsSeconds =
        before.nats && after.nats && after.nats.size > 0 ? total(cpuSince(before.nats, after.nats)) : null;
      return {
        processSeconds: after.process - before.process,
        mainSeconds: (after.threads.get('main') ?? 0) - (before.threads.get('main') ?? 0),
        postgresSeconds: total(cpuSince(before.postgres, after.postgres)),
        natsSeconds,
      };
    },
  };
};

export type CpuMeter = ReturnType<typeof cpuMeter>;

/** The NUL-separated `-p <port>` of a nats-server's command line, from the URL the bench uses. */
export const natsNeedleOf = (url: string): string => `\0-p\0${new URL(url).port || '4222'}\0`;

/** µs per item, rounded. */
export const usPer = (seconds: number, items: number): number => Math.round((seconds * 1e6) / items);

export const describeCpu = (w: CpuWindow, items: number): string =>
  `${usPer(w.processSeconds, items)} µs (main thread ${usPer(w.mainSeconds, items)}) + PG ${usPer(w.postgresSeconds, items)} µs` +
  (w.natsSeconds === null ? '' : ` + nats-server ${usPer(w.natsSeconds, items)} µs`);
