import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

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
  const bytes = randomBytes(16);
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b & 31];
  return `${prefix}_${time}${rand}`;
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
