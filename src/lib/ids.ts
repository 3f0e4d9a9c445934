import { createHash, randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * Random bytes for ids, drawn from one pool refilled 256 ids at a time: a request needs one id, and
 * a syscall plus a fresh Buffer per id showed in the gateway's profile (crypto.randomUUID pools the
 * same way). Ids are unique and unguessable enough to name things, never secrets: see newSecret.
 */
const POOL_IDS = 256;
const pool = Buffer.allocUnsafe(16 * POOL_IDS);
let poolOffset = pool.length;

/**
 * Sortable ids: 10 characters of millisecond time then 16 random characters (Crockford base32,
 * lower case), behind a type prefix such as `req_` or `ws_`.
 */
export const newId = (prefix: string, now = Date.now()): string => {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let rand = '';
  for (let i = poolOffset; i < poolOffset + 16; i++) rand += ALPHABET[pool[i]! & 31];
  poolOffset += 16;
  return `${prefix}_${time}${rand}`;
};

const TIME_CHARS = /^[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The creation time written in an id `newId` made (any prefix, e.g. `vs_`, or `file-` for ids
 * shaped like OpenAI's), or null when `id` is not `prefix` and 26 id characters.
 */
export const idTime = (id: string, prefix: string): Date | null => {
  if (!id.startsWith(prefix) || !TIME_CHARS.test(id.slice(prefix.length))) return null;
  let ms = 0;
  for (const c of id.slice(prefix.length, prefix.length + 10)) ms = ms * 32 + ALPHABET.indexOf(c);
  return new Date(ms);
};

/** A secret token: a visible prefix and 32 random bytes in base64url. */
export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

/**
 * An id derived from names, for resources unique by name within their parent: creating one twice
 * lands on the same stream, so the second create is a conflict (or a no-op for idempotent callers).
 */
export const idFromNames = (prefix: string, ...parts: string[]): string => {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  let out = '';
  for (let i = 0; i < 20; i++) out += ALPHABET[digest[i]! & 31];
  return `${prefix}_${out}`;
};

/**
 * A correlation id from outside (a caller's or an upstream's x-request-id): visible ASCII, at most
 * 128 characters, so it is safe to echo in a header and to store.
 */
export const isCorrelationId = (value: unknown): value is string =>
  typeof value === 'string' && /^[\x21-\x7e]{1,128}$/.test(value);
