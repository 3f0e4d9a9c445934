#!/usr/bin/env node
// The one binary. Runs the compiled build when dist/ exists and no source is newer than it,
// otherwise the TypeScript sources through tsx (no build step needed after `npm ci`): entry.js.
// SVC_FROM_SOURCE=1 runs the sources even beside a fresh build (the gateway bench compares both).
import { fileURLToPath } from 'node:url';
import { chooseEntry, mtimeOf, newestMtime } from './entry.js';

const dist = new URL('../dist/cli/main.js', import.meta.url);
const entry = chooseEntry({
  distMtime: mtimeOf(fileURLToPath(dist)),
  newestSourceMtime: newestMtime(fileURLToPath(new URL('../src', import.meta.url))),
  fromSource: process.env.SVC_FROM_SOURCE === '1',
});
if (entry === 'dist') {
  await import(dist.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
