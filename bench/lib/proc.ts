import { readdir, readFile } from 'node:fs/promises';

/**
 * A /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line, read for the benches: the command name
 * (in parentheses, and it may itself hold spaces) and the CPU time (user + system) used so far.
 * /proc counts CPU in USER_HZ ticks, which are 100 a second on Linux whatever the kernel's tick rate.
 */
export const parseProcStat = (stat: string): { name: string; cpuSeconds: number } => {
  const { name, cpuSeconds } = parseProcStatFull(stat);
  return { name, cpuSeconds };
};

export interface ProcStat {
  name: string;
  ppid: number;
  /** utime + stime of the process itself, seconds. */
  cpuSeconds: number;
  /** cutime + cstime: the CPU of children it has reaped (and of theirs), seconds. */
  reapedSeconds: number;
}

export const parseProcStatFull = (stat: string): ProcStat => {
  const close = stat.lastIndexOf(')');
  // Fields after the name, numbered from state (3rd field of stat(5)) at index 0.
  const fields = stat.slice(close + 2).split(' ');
  const ticks = (i: number) => Number(fields[i]);
  return {
    name: stat.slice(stat.indexOf('(') + 1, close),
    ppid: ticks(1),
    cpuSeconds: (ticks(11) + ticks(12)) / 100,
    reapedSeconds: (ticks(13) + ticks(14)) / 100,
  };
};

const readStat = async (pid: number): Promise<ProcStat | null> => {
  try {
    return parseProcStatFull(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null; // gone between the listing and the read
  }
};

/** VmRSS in MB, null when the process is gone (or a zombie, which has none). */
export const vmRssMb = async (pid: number): Promise<number | null> => {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
};

/**
 * `root` and every descendant alive now, found through the ppid field of /proc/<pid>/stat
 * (/proc/<pid>/task/<tid>/children is not compiled into every kernel).
 */
export const processTree = async (root: number): Promise<Map<number, ProcStat>> => {
  const all = new Map<number, ProcStat>();
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d)).map(Number);
  await Promise.all(
    pids.map(async (pid) => {
      const s = await readStat(pid);
      if (s) all.set(pid, s);
    }),
  );
  const children = new Map<number, number[]>();
  for (const [pid, s] of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  const tree = new Map<number, ProcStat>();
  const queue = all.has(root) ? [root] : [];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    tree.set(pid, all.get(pid)!);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
};

/** Which column a process's CPU and memory go to. */
export type ProcessKind = 'postgres' | 'app';
export const kindOf = (name: string): ProcessKind => (name === 'postgres' ? 'postgres' : 'app');

export interface TreeUsage {
  /** CPU seconds used over the window by the tree's processes other than PostgreSQL's. */
  appCpu: number;
  /** CPU seconds of the PostgreSQL processes in the tree (an embedded server and its backends). */
  postgresCpu: number;
  /** Sum of VmRSS of the non-PostgreSQL processes at the last sample, MB. */
  appRssEnd: number;
  /** The highest such sum seen by any sample in the window, MB. */
  appRssPeak: number;
  /** Processes seen in the window (all kinds). */
  processes: number;
}

/**
 * CPU and memory of a whole process tree over a window, re-scanned every `everyMs` (children may
 * start late). Counting stays exact when processes come and go: the tree's total at any moment is
 * the sum over live processes of own + reaped CPU, since the kernel moves a child's time into its
 * parent's cutime/cstime when the parent reaps it. So the window's CPU is, over processes alive at
 * the end, (now - at start, or - 0 for one born in the window), minus the start figure of every
 * process that ended in the window (its whole life reappears in its parent's reaped time).
 * A process is attributed by its own name, and the reaped time of a parent by the parent's name
 * (PostgreSQL's postmaster reaps its backends).
 */
export const meterTree = (root: number, everyMs = 250) => {
  const baseline = new Map<number, { kind: ProcessKind; cpu: number }>();
  const seen = new Set<number>();
  let last = new Map<number, ProcStat>();
  let rssEnd = 0;
  let rssPeak = 0;
  let running: Promise<void> = Promise.resolve();
  const total = (s: ProcStat) => s.cpuSeconds + s.reapedSeconds;

  const sample = async (): Promise<Map<number, ProcStat>> => {
    const tree = await processTree(root);
    for (const pid of tree.keys()) seen.add(pid);
    const apps = [...tree].filter(([, s]) => kindOf(s.name) === 'app').map(([pid]) => vmRssMb(pid));
    const rss = (await Promise.all(apps)).reduce((sum: number, mb) => sum + (mb ?? 0), 0);
    rssEnd = rss;
    rssPeak = Math.max(rssPeak, rss);
    last = tree;
    return tree;
  };

  let timer: NodeJS.Timeout | null = null;
  return {
    start: async (): Promise<void> => {
      const tree = await sample();
      for (const [pid, s] of tree) baseline.set(pid, { kind: kindOf(s.name), cpu: total(s) });
      timer = setInterval(() => {
        running = running.then(() => sample().then(() => undefined));
      }, everyMs);
    },
    /** The usage from start() until now; sampling goes on. */
    read: async (): Promise<TreeUsage> => {
      await running;
      const tree = await sample();
      const cpu = { app: 0, postgres: 0 };
      for (const [pid, s] of tree) cpu[kindOf(s.name)] += total(s) - (baseline.get(pid)?.cpu ?? 0);
      for (const [pid, b] of baseline) if (!tree.has(pid)) cpu[b.kind] -= b.cpu;
      return {
        appCpu: cpu.app,
        postgresCpu: cpu.postgres,
        appRssEnd: rssEnd,
        appRssPeak: rssPeak,
        processes: seen.size,
      };
    },
    stop: async (): Promise<void> => {
      if (timer) clearInterval(timer);
      await running;
    },
    /** The tree as last sampled. */
    current: () => last,
  };
};
