#!/usr/bin/env node
// Builds the console web app (web/console) into web/console/dist with esbuild: one hashed script,
// one hashed stylesheet and index.html naming them. Runs in `npm ci` (prepare) and `npm run build`;
// everything it needs comes from node_modules, nothing is downloaded.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'web', 'console');
const dist = join(root, 'dist');
// Built beside, then swapped in: a failed build leaves the last good one in place.
const out = join(root, `.dist-${process.pid}`);
const started = Date.now();

await rm(out, { recursive: true, force: true });
await mkdir(join(out, 'assets'), { recursive: true });
const result = await esbuild
  .build({
    entryPoints: [join(root, 'src', 'main.tsx')],
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    sourcemap: 'linked',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    outdir: join(out, 'assets'),
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  })
  .catch(async (err) => {
    await rm(out, { recursive: true, force: true });
    throw err;
  });
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((p) => p.endsWith('.js'));
const css = outputs.find((p) => p.endsWith('.css'));
if (!js || !css) throw new Error(`console build: expected one .js and one .css, got ${outputs.join(', ')}`);
const html = (await readFile(join(root, 'index.html'), 'utf8')).replace('%JS%', js).replace('%CSS%', css);
await writeFile(join(out, 'index.html'), html);
await rm(dist, { recursive: true, force: true });
await rename(out, dist);
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(
  `console: built ${js} and ${css} (${Math.round(bytes / 1024)} KiB with maps) in ${Date.now() - started} ms`,
);
