import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const nodeRequire = createRequire(import.meta.url);

/** Under tsx (tests, `svc` from source) a worker is TypeScript and needs tsx registered in it. */
const tsxApiUrl = (): string => {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return pathToFileURL(join(dirname(nodeRequire.resolve('tsx/package.json')), 'dist/esm/api/index.mjs'))
      .href;
  }
};

/**
 * A worker thread running the module `name` beside the caller (`caller` is its import.meta.url):
 * the compiled `.js` in dist, or the `.ts` source through tsx when the caller runs from source.
 */
export const moduleWorker = (caller: string, name: string, options: WorkerOptions): Worker => {
  const fromSource = caller.endsWith('.ts');
  const entry = new URL(`./${name}${fromSource ? '.ts' : '.js'}`, caller);
  if (!fromSource) return new Worker(entry, options);
  const bootstrap = `import(${JSON.stringify(tsxApiUrl())})
    .then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })
    .catch((err) => { setImmediate(() => { throw err; }); });`;
  return new Worker(bootstrap, { ...options, eval: true });
};
