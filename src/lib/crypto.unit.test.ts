import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, hashSecret, SecretCryptoError, safeEqual } from './crypto.js';

const KEY = randomBytes(32);
const OTHER_KEY = randomBytes(32);
const PLAINTEXT = '{"access_key_id":"AKIDEXAMPLE","secret_access_key":"wJalrXUtnFEMI/K7MDENG"}';
const AAD = 'conn_01hzx3example';

/** Flips one bit of one decoded part and re-encodes it, so the token stays well formed. */
const tamper = (token: string, index: number): string => {
  const parts = token.split('.');
  const bytes = Buffer.from(parts[index]!, 'base64url');
  bytes[0] = bytes[0]! ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
};

const refused = (fn: () => unknown, reason: SecretCryptoError['reason']) => {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(SecretCryptoError);
  expect((caught as SecretCryptoError).reason).toBe(reason);
};

describe('encryptSecret / decryptSecret', () => {
  it('round-trips, with and without aad, including empty and non-ASCII text', () => {
    expect(decryptSecret(KEY, encryptSecret(KEY, PLAINTEXT, AAD), AAD)).toBe(PLAINTEXT);
    expect(decryptSecret(KEY, encryptSecret(KEY, PLAINTEXT))).toBe(PLAINTEXT);
    expect(decryptSecret(KEY, encryptSecret(KEY, ''))).toBe('');
    expect(decryptSecret(KEY, encryptSecret(KEY, 'clé-🔑', AAD), AAD)).toBe('clé-🔑');
  });

  it('writes a versioned token of four base64url parts with a 12-byte iv and 16-byte tag', () => {
    const [version, iv, tag, ciphertext, ...rest] = encryptSecret(KEY, PLAINTEXT, AAD).split('.');
    expect(version).toBe('v1');
    expect(Buffer.from(iv!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(tag!, 'base64url')).toHaveLength(16);
    expect(Buffer.from(ciphertext!, 'base64url')).toHaveLength(Buffer.byteLength(PLAINTEXT));
    expect(rest).toEqual([]);
  });

  it('never contains the plaintext, raw or encoded', () => {
    const token = encryptSecret(KEY, PLAINTEXT, AAD);
    for (const form of [PLAINTEXT, 'AKIDEXAMPLE', Buffer.from(PLAINTEXT).toString('base64url')]) {
      expect(token).not.toContain(form);
    }
  });

  it('gives a different token each time for the same input', () => {
    const a = encryptSecret(KEY, PLAINTEXT, AAD);
    const b = encryptSecret(KEY, PLAINTEXT, AAD);
    expect(a).not.toBe(b);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
  });

  it.each([
    ['iv', 1],
    ['tag', 2],
    ['ciphertext', 3],
  ])('refuses a tampered %s', (_part, index) => {
    refused(
      () => decryptSecret(KEY, tamper(encryptSecret(KEY, PLAINTEXT, AAD), index), AAD),
      'unauthenticated',
    );
  });

  it('refuses a tampered version', () => {
    const token = encryptSecret(KEY, PLAINTEXT, AAD);
    refused(() => decryptSecret(KEY, token.replace(/^v1/, 'v2'), AAD), 'malformed');
  });

  it('refuses a truncated tag, which GCM would otherwise verify with less strength', () => {
    const parts = encryptSecret(KEY, PLAINTEXT, AAD).split('.');
    parts[2] = Buffer.from(parts[2]!, 'base64url').subarray(0, 12).toString('base64url');
    refused(() => decryptSecret(KEY, parts.join('.'), AAD), 'malformed');
  });

  it('refuses non-canonical base64url, missing and extra parts', () => {
    const token = encryptSecret(KEY, PLAINTEXT, AAD);
    const parts = token.split('.');
    refused(
      () => decryptSecret(KEY, [parts[0], parts[1], `${parts[2]}=`, parts[3]].join('.'), AAD),
      'malformed',
    );
    refused(
      () => decryptSecret(KEY, [parts[0], parts[1], `${parts[2]}!`, parts[3]].join('.'), AAD),
      'malformed',
    );
    refused(() => decryptSecret(KEY, parts.slice(0, 3).join('.'), AAD), 'malformed');
    refused(() => decryptSecret(KEY, `${token}.x`, AAD), 'malformed');
    refused(() => decryptSecret(KEY, PLAINTEXT, AAD), 'malformed');
  });

  it('refuses the wrong master key', () => {
    refused(() => decryptSecret(OTHER_KEY, encryptSecret(KEY, PLAINTEXT, AAD), AAD), 'unauthenticated');
  });

  it('binds the token to its record: another aad, or none, is refused', () => {
    const token = encryptSecret(KEY, PLAINTEXT, AAD);
    refused(() => decryptSecret(KEY, token, 'conn_other'), 'unauthenticated');
    refused(() => decryptSecret(KEY, token), 'unauthenticated');
    refused(() => decryptSecret(KEY, encryptSecret(KEY, PLAINTEXT), AAD), 'unauthenticated');
  });

  it('refuses a master key that is not 32 bytes', () => {
    refused(() => encryptSecret(randomBytes(16), PLAINTEXT), 'bad_key');
    refused(() => decryptSecret(randomBytes(31), encryptSecret(KEY, PLAINTEXT)), 'bad_key');
  });

  it('names no plaintext in its errors', () => {
    const token = encryptSecret(KEY, PLAINTEXT, AAD);
    expect(() => decryptSecret(OTHER_KEY, token, AAD)).toThrow(/failed authentication/);
    expect(() => decryptSecret(OTHER_KEY, token, AAD)).not.toThrow(/AKIDEXAMPLE/);
  });
});

describe('hashSecret / safeEqual', () => {
  it('hashes to sha256 hex, stable and distinct', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('sk_a')).not.toBe(hashSecret('sk_b'));
  });

  it.each([
    ['abc', 'abc', true],
    ['abc', 'abd', false],
    ['abc', 'abcd', false],
    ['', '', true],
    ['', 'a', false],
  ])('safeEqual(%j, %j) is %s', (a, b, expected) => {
    expect(safeEqual(a, b)).toBe(expected);
  });
});
