import { createHash, createPrivateKey, sign as nodeSign } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../lib/canonical-json.js';
import { type BatchHead, HEAD_FORMAT, MANIFEST_FORMAT, type Manifest } from './model.js';
import {
  generateSigningKey,
  keyIdOf,
  publicKeyOf,
  signHead,
  signManifest,
  verifyHead,
  verifyManifest,
} from './signing.js';

/** RFC 8032 section 7.1, TEST 1. */
const RFC8032_SECRET = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
const RFC8032_PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const RFC8032_SIGNATURE =
  'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';

const key = generateSigningKey();
const publicHex = key.publicKey.toString('hex');

const head: BatchHead = {
  format: HEAD_FORMAT,
  tenant_id: 'tenant-a',
  batch_no: 2,
  first_index: 3,
  tree_size: 7,
  root: 'ab'.repeat(32),
  previous_root: 'cd'.repeat(32),
  from: '2025-01-01T00:00:00.000Z',
  to: '2025-01-01T00:05:00.000Z',
  key_id: key.keyId,
};

const manifest: Manifest = {
  format: MANIFEST_FORMAT,
  tenant_id: 'tenant-a',
  batch_no: 2,
  head,
  head_signature: signHead(head, key.secretKey),
  archive: { key: 'audit/batches/000000000002.json.gz', sha256: 'ef'.repeat(32), bytes: 1234 },
  previous_manifest_sha256: '01'.repeat(32),
  key_id: key.keyId,
};

const flipHexBit = (hex: string, bit: number) => {
  const bytes = Buffer.from(hex, 'hex');
  bytes[bit >> 3]! ^= 1 << (bit & 7);
  return bytes.toString('hex');
};

/** OpenSSL's Ed25519, an implementation independent of noble. */
const opensslSign = (message: Buffer, secretKey: Buffer) => {
  const x = publicKeyOf(secretKey).toString('base64url');
  const keyObject = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: secretKey.toString('base64url'), x },
    format: 'jwk',
  });
  return nodeSign(null, message, keyObject).toString('hex');
};

describe('keys', () => {
  it('generates 32-byte keys whose id is the SHA-256 prefix of the public key', () => {
    const k = generateSigningKey();
    expect(k.secretKey.length).toBe(32);
    expect(k.publicKey.length).toBe(32);
    expect(k.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(k.keyId).toBe(createHash('sha256').update(k.publicKey).digest('hex').slice(0, 16));
    expect(keyIdOf(k.publicKey)).toBe(k.keyId);
    expect(publicKeyOf(k.secretKey)).toEqual(k.publicKey);
    expect(generateSigningKey().keyId).not.toBe(k.keyId);
  });

  it('wires SHA-512 so noble reproduces RFC 8032 test 1', () => {
    expect(publicKeyOf(RFC8032_SECRET).toString('hex')).toBe(RFC8032_PUBLIC);
    expect(Buffer.from(ed.sign(new Uint8Array(0), RFC8032_SECRET)).toString('hex')).toBe(RFC8032_SIGNATURE);
  });
});

describe('head signatures', () => {
  const signature = signHead(head, key.secretKey);

  it('sign deterministically (RFC 8032) over the canonical JSON, exactly as OpenSSL does', () => {
    expect(signature).toMatch(/^[0-9a-f]{128}$/);
    expect(signHead(head, key.secretKey)).toBe(signature);
    const reordered = Object.fromEntries(Object.entries(head).reverse()) as unknown as BatchHead;
    expect(signHead(reordered, key.secretKey)).toBe(signature);
    expect(signature).toBe(opensslSign(Buffer.from(canonicalJson(head), 'utf8'), key.secretKey));
    expect(verifyHead(head, signature, publicHex)).toBe(true);
    expect(verifyHead(reordered, signature, publicHex)).toBe(true);
  });

  it('fail on any changed field of the head', () => {
    const changes: Partial<BatchHead>[] = [
      { tenant_id: 'tenant-b' },
      { batch_no: 3 },
      { first_index: 4 },
      { tree_size: 8 },
      { root: 'ab'.repeat(31) + 'ac' },
      { previous_root: null },
      { from: '2025-01-01T00:00:00.001Z' },
      { to: '2025-01-01T00:05:00.001Z' },
      { key_id: '0'.repeat(16) },
    ];
    for (const change of changes)
      expect(verifyHead({ ...head, ...change }, signature, publicHex)).toBe(false);
  });

  it('fail on every flipped bit of the signature or the public key', () => {
    const bits = (n: number) => Array.from({ length: n }, (_, bit) => bit);
    expect(bits(512).filter((bit) => verifyHead(head, flipHexBit(signature, bit), publicHex))).toEqual([]);
    expect(bits(256).filter((bit) => verifyHead(head, signature, flipHexBit(publicHex, bit)))).toEqual([]);
  });

  it('fail under another key, and never throw on malformed input', () => {
    const other = generateSigningKey();
    expect(verifyHead(head, signature, other.publicKey.toString('hex'))).toBe(false);
    expect(verifyHead(head, signHead(head, other.secretKey), publicHex)).toBe(false);
    const malformed: unknown[] = [
      '',
      signature.slice(2),
      `${signature}00`,
      signature.toUpperCase(),
      `zz${signature.slice(2)}`,
      null,
      undefined,
      42,
      {},
    ];
    for (const bad of malformed) {
      expect(verifyHead(head, bad as string, publicHex)).toBe(false);
      expect(verifyHead(head, signature, bad as string)).toBe(false);
    }
    // Not a point on the curve, or canonicalJson refuses the value.
    expect(verifyHead(head, signature, 'ff'.repeat(32))).toBe(false);
    expect(verifyHead({ ...head, batch_no: Number.NaN }, signature, publicHex)).toBe(false);
    expect(verifyHead(null as unknown as BatchHead, signature, publicHex)).toBe(false);
  });

  it('refuse a secret key of the wrong length', () => {
    expect(() => signHead(head, Buffer.alloc(31))).toThrow(RangeError);
    expect(() => signHead(head, Buffer.alloc(64))).toThrow(RangeError);
  });
});

describe('manifest signatures', () => {
  const signature = signManifest(manifest, key.secretKey);

  it('sign and verify like heads, and neither signature stands in for the other', () => {
    expect(signManifest(manifest, key.secretKey)).toBe(signature);
    expect(verifyManifest(manifest, signature, publicHex)).toBe(true);
    expect(verifyManifest({ ...manifest, previous_manifest_sha256: null }, signature, publicHex)).toBe(false);
    expect(
      verifyManifest({ ...manifest, archive: { ...manifest.archive, bytes: 1235 } }, signature, publicHex),
    ).toBe(false);
    expect(verifyManifest(manifest, flipHexBit(signature, 100), publicHex)).toBe(false);
    expect(verifyManifest(manifest, manifest.head_signature, publicHex)).toBe(false);
    expect(verifyHead(head, signature, publicHex)).toBe(false);
  });
});
