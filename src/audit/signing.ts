import { createHash, randomBytes } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { canonicalJson } from '../lib/canonical-json.js';
import type { BatchHead, Manifest } from './model.js';

/*
 * Ed25519 (RFC 8032) over the UTF-8 bytes of canonicalJson(value). noble's synchronous API needs
 * a SHA-512; node:crypto's is native and several times faster than the async WebCrypto path.
 */
ed.hashes.sha512 = (message) => createHash('sha512').update(message).digest();

const SECRET_KEY_BYTES = 32;
const PUBLIC_KEY_HEX = /^[0-9a-f]{64}$/;
const SIGNATURE_HEX = /^[0-9a-f]{128}$/;

export interface SigningKey {
  keyId: string;
  publicKey: Buffer;
  secretKey: Buffer;
}

/** The first 16 hex digits of SHA-256(publicKey): how heads, manifests and the key file name a key. */
export const keyIdOf = (publicKey: Uint8Array): string =>
  createHash('sha256').update(publicKey).digest('hex').slice(0, 16);

export const publicKeyOf = (secretKey: Uint8Array): Buffer => Buffer.from(ed.getPublicKey(secretKey));

export const generateSigningKey = (): SigningKey => {
  const secretKey = randomBytes(SECRET_KEY_BYTES);
  const publicKey = publicKeyOf(secretKey);
  return { keyId: keyIdOf(publicKey), publicKey, secretKey };
};

const messageOf = (value: unknown) => Buffer.from(canonicalJson(value), 'utf8');

const sign = (value: unknown, secretKey: Uint8Array): string => {
  if (secretKey.length !== SECRET_KEY_BYTES) {
    throw new RangeError(`an ed25519 secret key is ${SECRET_KEY_BYTES} bytes, got ${secretKey.length}`);
  }
  return Buffer.from(ed.sign(messageOf(value), secretKey)).toString('hex');
};

/**
 * Strict RFC 8032 verification (not ZIP-215), so that what verifies here verifies under any
 * conforming implementation an auditor may use. Malformed input of any kind is just "no".
 */
const verify = (value: unknown, signatureHex: unknown, publicKeyHex: unknown): boolean => {
  if (typeof signatureHex !== 'string' || !SIGNATURE_HEX.test(signatureHex)) return false;
  if (typeof publicKeyHex !== 'string' || !PUBLIC_KEY_HEX.test(publicKeyHex)) return false;
  try {
    return ed.verify(Buffer.from(signatureHex, 'hex'), messageOf(value), Buffer.from(publicKeyHex, 'hex'), {
      zip215: false,
    });
  } catch {
    // A public key that is not a curve point, a value canonicalJson refuses: not a valid signature.
    return false;
  }
};

export const signHead = (head: BatchHead, secretKey: Uint8Array): string => sign(head, secretKey);

export const verifyHead = (head: BatchHead, signatureHex: string, publicKeyHex: string): boolean =>
  verify(head, signatureHex, publicKeyHex);

export const signManifest = (manifest: Manifest, secretKey: Uint8Array): string => sign(manifest, secretKey);

export const verifyManifest = (manifest: Manifest, signatureHex: string, publicKeyHex: string): boolean =>
  verify(manifest, signatureHex, publicKeyHex);
