#!/usr/bin/env node
// The one binary. Runs the compiled build when SVC_FROM_DIST=1 and dist/ exists, otherwise the
// TypeScript sources through tsx (no build step needed after `npm ci`).
import { existsSync } from 'node:fs';

const dist = new URL('../dist/cli/main.js', import.meta.url);
if (process.env.SVC_FROM_DIST === '1' && existsSync(dist)) {
  await import(dist.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
