import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/**
 * Summarises a V8 .cpuprofile (from BENCH_GATEWAY_CPU_PROF): self time by function and by where the
 * code lives (node internals, each package, our own src), so a profile reads in one screen.
 *
 *   node --import tsx bench/gateway/profile-top.ts <file.cpuprofile> [top=40]
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-top.ts <file.cpuprofile> [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
for (const [i, id] of profile.samples.entries())
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
// Idle time is the gateway waiting for work (start-up, set-up, the other targets' runs): left out.
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
for (const id of idle) self.delete(id);
const total = [...self.values()].reduce((a, b) => a + b, 0);

const where = (url: string): string => {
  if (url === '') return '(native / vm)';
  if (url.startsWith('node:')) return 'node internals';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  return url.includes('/src/') || url.includes('/dist/') ? 'ours' : url;
};

const fns = new Map<string, number>();
const places = new Map<string, number>();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const short = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url;
  const key = `${functionName || '(anonymous)'}  ${short}${url ? `:${lineNumber + 1}` : ''}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  places.set(where(url), (places.get(where(url)) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
console.log(
  `${file}: ${(total / 1e6).toFixed(2)} s busy (idle left out)\n\nself time by where the code lives:`,
);
for (const [k, us] of [...places].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${pct(us)}  ${k}`);
console.log('\nself time by function:');
for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 40)))
  console.log(`  ${pct(us)}  ${k}`);
