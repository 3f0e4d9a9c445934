import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// The real bin/svc.js, copied into a small tree whose dist/ and src/ entries only
// say which of them ran, picks the compiled build when it is fresh and the sources otherwise, with
// no environment variable.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let tree: string;

// Times an hour in the past, so that what the file system stamps now is newer than all of them.
const HOUR_AGO = Date.now() - 3_600_000;
const at = (seconds: number) => new Date(HOUR_AGO + seconds * 1000);
const setTime = (path: string, seconds: number) => utimesSync(path, at(seconds), at(seconds));

beforeEach(async () => {
  tree = await mkdtemp(join(tmpdir(), 'svc-entry-'));
  mkdirSync(join(tree, 'bin'));
  for (const f of ['svc.js', 'entry.js']) copyFileSync(join(ROOT, 'bin', f), join(tree, 'bin', f));
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
  writeFileSync(join(tree, 'package.json'), '{"type":"module"}\n');
  mkdirSync(join(tree, 'src', 'cli'), { recursive: true });
  writeFileSync(join(tree, 'src', 'cli', 'main.ts'), "const from: string = 'source';\nconsole.log(from);\n");
  writeFileSync(join(tree, 'src', 'cli', 'output.ts'), 'export {};\n');
  mkdirSync(join(tree, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(tree, 'dist', 'cli', 'main.js'), "console.log('dist');\n");
  // The sources as of t=0, the build at t=10.
  for (const p of ['src/cli/main.ts', 'src/cli/output.ts', 'src/cli', 'src']) setTime(join(tree, p), 0);
  setTime(join(tree, 'dist', 'cli', 'main.js'), 10);
});
afterEach(async () => {
  await rm(tree, { recursive: true, force: true });
});

const svc = (env: NodeJS.ProcessEnv = {}) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [join(tree, 'bin', 'svc.js')], {
      env: { ...process.env, SVC_FROM_SOURCE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`exit ${code}: ${out}`)),
    );
  });

describe('bin/svc.js picks its entry', () => {
  it('runs a built dist/ that is newer than every source', async () => {
    expect(await svc()).toBe('dist');
  });

  it('runs the sources when one of them changed after the build', async () => {
    setTime(join(tree, 'src', 'cli', 'output.ts'), 20);
    expect(await svc()).toBe('source');
  });

  it('runs the sources when a source file was removed after the build', async () => {
    unlinkSync(join(tree, 'src', 'cli', 'output.ts'));
    expect(await svc()).toBe('source');
  });

  it('runs the sources when there is no build', async () => {
    await rm(join(tree, 'dist'), { recursive: true });
    expect(await svc()).toBe('source');
  });

  it('runs the sources beside a fresh build when SVC_FROM_SOURCE=1', async () => {
    expect(await svc({ SVC_FROM_SOURCE: '1' })).toBe('source');
  });
});
