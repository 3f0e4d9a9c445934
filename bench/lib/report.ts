/** Shared helpers for the benchmarks under bench/: a comparison table and a timer. */

export interface BenchRow {
  metric: string;
  measured: string;
  target?: string;
  /** undefined when the row has no target. */
  met?: boolean;
}

export const printTable = (title: string, rows: BenchRow[]): void => {
  const cells = rows.map((r) => [
    r.metric,
    r.measured,
    r.target ?? '-',
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const header = ['metric', 'measured', 'target', 'met'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells) console.log(line(c));
  console.log('');
};

export const timed = async <T>(fn: () => Promise<T>): Promise<{ result: T; seconds: number }> => {
  const started = performance.now();
  const result = await fn();
  return { result, seconds: (performance.now() - started) / 1_000 };
};

export const perSecond = (count: number, seconds: number): string =>
  `${Math.round(count / seconds).toLocaleString('en-US')}/s`;
