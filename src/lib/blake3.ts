import { hash } from 'blake3-wasm';

/** The blake3 digest of `bytes` as 64 lowercase hex digits (body packs, trace artifacts). */
// The Node build of blake3-wasm is synchronous (no `load()`); its typings widen the digest to a string too.
export const blake3Hex = (bytes: Uint8Array): string => {
  const digest = hash(bytes);
  return typeof digest === 'string' ? digest : digest.toString('hex');
};
