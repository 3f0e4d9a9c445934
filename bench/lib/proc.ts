/**
 * A /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line, read for the benches: the command name
 * (in parentheses, and it may itself hold spaces) and the CPU time (user + system) used so far.
 * /proc counts CPU in USER_HZ ticks, which are 100 a second on Linux whatever the kernel's tick rate.
 */
export const parseProcStat = (stat: string): { name: string; cpuSeconds: number } => {
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return {
    name: stat.slice(stat.indexOf('(') + 1, close),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100,
  };
};
