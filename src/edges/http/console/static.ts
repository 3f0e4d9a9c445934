import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** The console's base path (ARCHITECTURE.md: the web app at /console). */
export const CONSOLE_BASE = '/console';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * The console page may load only this origin's assets (no inline or third-party script or style)
 * and call only this origin and the ones named (the payment provider's API), and it may not be
 * framed (clickjacking).
 */
const pageHeaders = (connect: readonly string[]) => ({
  'content-security-policy':
    `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src ${["'self'", ...connect].join(' ')}; ` +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
});

interface Built {
  index: Buffer;
  assets: Map<string, { body: Buffer; type: string }>;
}

/** Reads the built app (index.html and hashed assets) once; null when it has not been built. */
export const loadConsoleApp = async (dir: string): Promise<Built | null> => {
  let index: Buffer;
  try {
    index = await readFile(join(dir, 'index.html'));
  } catch {
    return null;
  }
  const assets = new Map<string, { body: Buffer; type: string }>();
  const names = await readdir(join(dir, 'assets')).catch(() => null);
  // A page without its assets is a broken build: served as not built, with the reason logged.
  if (!names) return null;
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (type) assets.set(name, { body: await readFile(join(dir, 'assets', name)), type });
  }
  return { index, assets };
};

const notBuilt = (reply: FastifyReply) =>
  reply
    .code(503)
    .headers({ ...pageHeaders([]), 'cache-control': 'no-store' })
    .type('text/html; charset=utf-8')
    .send(
      '<!doctype html><html lang="en"><title>Console not built</title><h1>The console is not built</h1>' +
        '<p>Run <code>npm run build</code> (or <code>npm ci</code>, which builds it) and restart.</p></html>',
    );

/**
 * Serves the console: hashed assets for a year (their names change with their content), the page
 * itself never cached (it names the current assets), and every other path under /console answers
 * the page, whose router shows the view. `/` sends a browser to the console.
 */
export const registerConsoleApp = (
  app: FastifyInstance,
  built: Built | null,
  options: {
    /** Origins the page may call besides its own: the payment provider's, for a top-up's confirm step. */
    connect?: readonly string[];
  } = {},
): void => {
  const headers = pageHeaders(options.connect ?? []);
  app.get('/', async (_request, reply) => reply.redirect(`${CONSOLE_BASE}/`, 302));
  const page = async (_request: unknown, reply: FastifyReply) => {
    if (!built) return notBuilt(reply);
    return reply
      .headers({ ...headers, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(built.index);
  };
  app.get(CONSOLE_BASE, page);
  app.get(`${CONSOLE_BASE}/*`, page);
  app.get(`${CONSOLE_BASE}/assets/:name`, async (request, reply) => {
    const asset = built?.assets.get((request.params as { name: string }).name);
    if (!asset)
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send('not found');
    return reply
      .headers({
        'cache-control': 'public, max-age=31536000, immutable',
        'x-content-type-options': 'nosniff',
      })
      .type(asset.type)
      .send(asset.body);
  });
};
