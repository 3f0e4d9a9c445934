import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Processes a test left behind under a data dir ("no process left behind"),
 * found in /proc rather than through the code under test: an embedded PostgreSQL is any process
 * whose working directory or `-D` argument lies under the dir (the postmaster and every backend
 * work in their cluster dir), a `svc` is a process with SVC_DATA_DIR=<dir> in its environment. The
 * machine's own PostgreSQL runs from /var/lib/postgresql and never matches.
 */
export interface Leftover {
  pid: number;
  kind: 'postgres' | 'svc';
  cmdline: string;
}

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

const isZombie = (pid: number): boolean => {
  const stat = read(`/proc/${pid}/stat`);
  return stat === null || stat[stat.lastIndexOf(')') + 2] === 'Z';
};

export const leftoversUnder = (dir: string): Leftover[] => {
  const found: Leftover[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || isZombie(pid)) continue;
    const args = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean);
    if (args.length === 0) continue;
    let cwd = '';
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // Gone meanwhile.
    }
    const dataArg = args[args.indexOf('-D') + 1] ?? '';
    const under = (p: string) => p === dir || p.startsWith(`${dir}/`);
    if (under(cwd) || (args.includes('-D') && under(dataArg))) {
      found.push({ pid, kind: 'postgres', cmdline: args.join(' ') });
      continue;
    }
    const environ = (read(`/proc/${pid}/environ`) ?? '').split('\0');
    if (environ.includes(`SVC_DATA_DIR=${dir}`)) found.push({ pid, kind: 'svc', cmdline: args.join(' ') });
  }
  return found;
};

/** Waits up to `timeoutMs` for nothing to be left; returns what still is. */
export const leftoversAfter = async (dir: string, timeoutMs = 5_000): Promise<Leftover[]> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = leftoversUnder(dir);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
};
