import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hash,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/**
 * Secrets at rest: AES-256-GCM under SVC_MASTER_KEY, in a self-describing text token
 * `v1.<iv>.<tag>.<ciphertext>` (base64url parts), so a later key or algorithm can be introduced
 * as v2 while v1 rows still decrypt.
 */

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

export type SecretCryptoFailure = 'bad_key' | 'malformed' | 'unauthenticated';

/** Thrown on a wrong master key, a tampered or truncated token, or an aad that does not match. */
export class SecretCryptoError extends Error {
  constructor(
    readonly reason: SecretCryptoFailure,
    message: string,
  ) {
    super(message);
    this.name = 'SecretCryptoError';
  }
}

const checkKey = (masterKey: Buffer): void => {
  if (masterKey.length !== KEY_BYTES) {
    throw new SecretCryptoError('bad_key', `master key must be ${KEY_BYTES} bytes, got ${masterKey.length}`);
  }
};

/**
 * The version is authenticated with the caller's aad, so a token cannot be relabelled as another
 * format. Pass the owning record's id as `aad`: the ciphertext then fails to open on any other
 * record, which stops a stored secret being copied across connections.
 */
const additionalData = (aad: string | undefined): Buffer =>
  Buffer.from(`${VERSION}\u0000${aad ?? ''}`, 'utf8');

export const encryptSecret = (masterKey: Buffer, plaintext: string, aad?: string): string => {
  checkKey(masterKey);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(aad));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `${VERSION}.${iv.toString('base64url')}.${tag.toString('base64url')}.${ciphertext.toString('base64url')}`;
};

export const decryptSecret = (masterKey: Buffer, token: string, aad?: string): string => {
  checkKey(masterKey);
  const parts = token.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) {
    throw new SecretCryptoError('malformed', `encrypted secret is not a ${VERSION} token`);
  }
  const iv = decodePart(parts[1]);
  const tag = decodePart(parts[2]);
  const ciphertext = decodePart(parts[3]);
  // GCM would verify a shortened tag, which weakens it; only the full length is accepted.
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SecretCryptoError('malformed', 'encrypted secret has a wrong iv or tag length');
  }
  const decipher = createDecipheriv('aes-256-gcm', masterKey, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(additionalData(aad));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretCryptoError(
      'unauthenticated',
      'encrypted secret failed authentication (tampered, wrong master key or wrong record)',
    );
  }
};

/**
 * Strict base64url: Node's decoder skips stray characters and ignores the spare bits of the last
 * character, so without the round-trip check an edited token could decode to the same bytes.
 */
const decodePart = (part: string | undefined): Buffer => {
  const bytes = part !== undefined && BASE64URL.test(part) ? Buffer.from(part, 'base64url') : null;
  if (bytes === null || bytes.toString('base64url') !== part) {
    throw new SecretCryptoError('malformed', 'encrypted secret is not valid base64url');
  }
  return bytes;
};

/** Lookup key for API keys, ingest keys and sessions: the secret itself is never stored. */
export const hashSecret = (secret: string): string =>
  // One-shot: no Hash object per call (the gateway hashes the API key of every request); same digest.
  hash('sha256', secret, 'hex');

/**
 * Constant-time string comparison. Both sides are hashed first so the time taken does not reveal
 * where the strings differ, nor (through an early length check) how long the expected one is.
 */
export const safeEqual = (a: string, b: string): boolean =>
  timingSafeEqual(
    createHash('sha256').update(a, 'utf8').digest(),
    createHash('sha256').update(b, 'utf8').digest(),
  );
