import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../lib/canonical-json.js';
import { leafHash, MerkleTree } from './merkle.js';
import {
  ARCHIVE_FORMAT,
  archiveKey,
  type BatchArchive,
  type BatchHead,
  HEAD_FORMAT,
  KEYS_FORMAT,
  MANIFEST_FORMAT,
  type Manifest,
  manifestKey,
  type PublishedKeys,
  type SignedManifest,
} from './model.js';
import { generateSigningKey, type SigningKey, signHead, signManifest } from './signing.js';
import { type EvidenceFile, type VerifyReport, verifyEvidence } from './verify.js';

/* Evidence built the way the sealer builds it, from a whole in-memory tree per tenant. */

const sha256Hex = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');
const hex = (buffers: Buffer[]) => buffers.map((b) => b.toString('hex'));

const eventBytes = (tenant: string, i: number, salt = '') =>
  Buffer.from(canonicalJson({ event_id: `${tenant}-evt-${i}${salt}`, kind: 'request', n: i, note: 'ok' }));

interface Log {
  tenant: string;
  archives: EvidenceFile[];
  manifests: EvidenceFile[];
  events: Buffer[];
}

/** A correct log of `sizes.length` batches, each signed by `key`, files named as the object store does. */
const buildLog = (
  tenant: string,
  key: SigningKey,
  sizes: number[],
  events: Buffer[] = Array.from({ length: sizes.reduce((a, b) => a + b, 0) }, (_, i) =>
    eventBytes(tenant, i),
  ),
): Log => {
  const tree = new MerkleTree(events.map(leafHash));
  const archives: EvidenceFile[] = [];
  const manifests: EvidenceFile[] = [];
  let first = 0;
  let previousManifest: Buffer | null = null;
  for (const [i, size] of sizes.entries()) {
    const batchNo = i + 1;
    const treeSize = first + size;
    const time = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString();
    const head: BatchHead = {
      format: HEAD_FORMAT,
      tenant_id: tenant,
      batch_no: batchNo,
      first_index: first,
      tree_size: treeSize,
      root: tree.root(treeSize).toString('hex'),
      previous_root: first === 0 ? null : tree.root(first).toString('hex'),
      from: time(first),
      to: time(treeSize - 1),
      key_id: key.keyId,
    };
    const archive: BatchArchive = {
      format: ARCHIVE_FORMAT,
      head,
      signature: signHead(head, key.secretKey),
      frontier: hex(tree.frontier(first)),
      consistency: hex(tree.consistencyProof(first, treeSize)),
      events: events.slice(first, treeSize).map((bytes, j) => ({
        index: first + j,
        event_id: (JSON.parse(bytes.toString()) as { event_id: string }).event_id,
        received_at: time(first + j),
        bytes: bytes.toString('base64'),
        leaf: leafHash(bytes).toString('hex'),
        proof: hex(tree.inclusionProof(first + j, treeSize)),
      })),
    };
    const archiveFile = { name: `${tenant}/${archiveKey(batchNo)}`, bytes: gzipSync(canonicalJson(archive)) };
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      tenant_id: tenant,
      batch_no: batchNo,
      head,
      head_signature: archive.signature,
      archive: {
        key: archiveKey(batchNo),
        sha256: sha256Hex(archiveFile.bytes),
        bytes: archiveFile.bytes.length,
      },
      previous_manifest_sha256: previousManifest ? sha256Hex(previousManifest) : null,
      key_id: key.keyId,
    };
    const manifestBytes = Buffer.from(
      canonicalJson({ manifest, signature: signManifest(manifest, key.secretKey) }),
    );
    archives.push(archiveFile);
    manifests.push({ name: `${tenant}/${manifestKey(batchNo)}`, bytes: manifestBytes });
    previousManifest = manifestBytes;
    first = treeSize;
  }
  return { tenant, archives, manifests, events };
};

const publish = (...keys: SigningKey[]): PublishedKeys => ({
  format: KEYS_FORMAT,
  keys: keys.map((k, i) => ({
    key_id: k.keyId,
    algorithm: 'ed25519',
    public_key: k.publicKey.toString('hex'),
    created_at: '2025-01-01T00:00:00.000Z',
    retired_at: i < keys.length - 1 ? '2025-01-02T00:00:00.000Z' : null,
  })),
});

const readArchive = (file: EvidenceFile) => JSON.parse(gunzipSync(file.bytes).toString()) as BatchArchive;
const readManifest = (file: EvidenceFile) => JSON.parse(file.bytes.toString()) as SignedManifest;

/** The archive file with `change` applied and nothing re-signed. */
const tamperArchive = (file: EvidenceFile, change: (a: BatchArchive) => void): EvidenceFile => {
  const archive = readArchive(file);
  change(archive);
  return { name: file.name, bytes: gzipSync(canonicalJson(archive)) };
};
const tamperManifest = (file: EvidenceFile, change: (m: SignedManifest) => void): EvidenceFile => {
  const signed = readManifest(file);
  change(signed);
  return { name: file.name, bytes: Buffer.from(canonicalJson(signed)) };
};
const replace = (files: EvidenceFile[], i: number, file: EvidenceFile) =>
  files.map((f, j) => (j === i ? file : f));

const key = generateSigningKey();
const retired = generateSigningKey();
const unpublished = generateSigningKey();
const keys = publish(retired, key);
const SIZES = [5, 8, 7];
const logA = buildLog('tenant-a', key, SIZES);
const logB = buildLog('tenant-b', key, [4, 9]);

const verify = (archives: EvidenceFile[], manifests: EvidenceFile[] = logA.manifests, published = keys) =>
  verifyEvidence({ keys: published, archives, manifests });

const expectFailure = (report: VerifyReport, expected: Partial<Extract<VerifyReport, { ok: false }>>) => {
  expect(report.ok).toBe(false);
  expect(report).toMatchObject(expected);
};

describe('a correct log', () => {
  it('verifies with and without manifests, several tenants in one folder, and reports each', () => {
    const report = verifyEvidence({
      keys,
      archives: [...logB.archives, ...logA.archives].reverse(),
      manifests: [...logA.manifests, ...logB.manifests],
    });
    expect(report).toEqual({
      ok: true,
      tenants: [
        {
          tenant_id: 'tenant-a',
          batches: 3,
          events: 20,
          tree_size: 20,
          root: readArchive(logA.archives[2]!).head.root,
        },
        {
          tenant_id: 'tenant-b',
          batches: 2,
          events: 13,
          tree_size: 13,
          root: readArchive(logB.archives[1]!).head.root,
        },
      ],
    });
    expect(verify(logA.archives, [])).toMatchObject({ ok: true });
    // Tenant B without manifests beside tenant A with them.
    expect(verify([...logA.archives, ...logB.archives], logA.manifests)).toMatchObject({ ok: true });
  });

  it('verifies heads signed by a retired key, and a partial export that starts past batch 1', () => {
    const old = buildLog('tenant-a', retired, SIZES);
    expect(verify(old.archives, old.manifests)).toMatchObject({ ok: true });
    expect(verify(logA.archives.slice(1), logA.manifests.slice(1))).toMatchObject({
      ok: true,
      tenants: [{ tenant_id: 'tenant-a', batches: 2, events: 15, tree_size: 20 }],
    });
  });

  it('verifies a batch that spans a power of two and a long log of one-event batches', () => {
    const sizes = [1, 1, 1, 1, 1, 3, 16, 1, 2];
    const log = buildLog('tenant-c', key, sizes);
    expect(verify(log.archives, log.manifests)).toMatchObject({ ok: true, tenants: [{ tree_size: 27 }] });
  });
});

describe('tampered events', () => {
  it('a flipped byte in an archived event', () => {
    const file = tamperArchive(logA.archives[1]!, (a) => {
      const bytes = Buffer.from(a.events[3]!.bytes, 'base64');
      bytes[bytes.length - 3]! ^= 0x01;
      a.events[3]!.bytes = bytes.toString('base64');
    });
    expectFailure(verify(replace(logA.archives, 1, file)), {
      tenant_id: 'tenant-a',
      batch_no: 2,
      event_index: 8,
      event_id: 'tenant-a-evt-8',
      file: 'tenant-a/audit/batches/000000000002.json.gz',
      reason: 'leaf hash does not match the event bytes',
    });
  });

  it('a rewritten event whose leaf is recomputed to match', () => {
    const file = tamperArchive(logA.archives[1]!, (a) => {
      const forged = eventBytes('tenant-a', 8, '-forged');
      a.events[3]!.bytes = forged.toString('base64');
      a.events[3]!.leaf = leafHash(forged).toString('hex');
    });
    expectFailure(verify(replace(logA.archives, 1, file)), {
      batch_no: 2,
      event_index: 8,
      reason: expect.stringContaining('event_id does not match the event bytes'),
    });
  });

  it('a rewritten event that keeps its event_id: only the inclusion proof catches it', () => {
    const file = tamperArchive(logA.archives[1]!, (a) => {
      const forged = Buffer.from(
        canonicalJson({ event_id: 'tenant-a-evt-8', kind: 'request', n: 8, note: 'no' }),
      );
      a.events[3]!.bytes = forged.toString('base64');
      a.events[3]!.leaf = leafHash(forged).toString('hex');
    });
    expectFailure(verify(replace(logA.archives, 1, file)), {
      batch_no: 2,
      event_index: 8,
      reason: 'inclusion proof does not verify against head.root',
    });
  });

  it('event bytes that are not a JSON object with an event_id', () => {
    const file = tamperArchive(logA.archives[0]!, (a) => {
      const forged = Buffer.from('[1,2]');
      a.events[2]!.bytes = forged.toString('base64');
      a.events[2]!.leaf = leafHash(forged).toString('hex');
    });
    expectFailure(verify(replace(logA.archives, 0, file)), {
      batch_no: 1,
      event_index: 2,
      reason: 'event bytes are not a JSON object with a string event_id',
    });
  });

  it('a removed event, in the middle and at the end', () => {
    const middle = tamperArchive(logA.archives[1]!, (a) => {
      a.events.splice(2, 1);
    });
    expectFailure(verify(replace(logA.archives, 1, middle)), {
      batch_no: 2,
      event_index: 7,
      reason: 'event indexes not contiguous: expected index 7, found 8',
    });
    const last = tamperArchive(logA.archives[1]!, (a) => {
      a.events.pop();
    });
    expectFailure(verify(replace(logA.archives, 1, last)), {
      batch_no: 2,
      event_index: 12,
      reason: expect.stringContaining('events are missing'),
    });
  });

  it('an added event', () => {
    const file = tamperArchive(logA.archives[2]!, (a) => {
      a.events.push({ ...a.events.at(-1)!, index: 20 });
    });
    expectFailure(verify(replace(logA.archives, 2, file)), {
      batch_no: 3,
      event_index: 20,
      reason: expect.stringContaining('archive holds more than the 7 events'),
    });
  });

  it('two swapped events, as they are and renumbered', () => {
    const swapped = tamperArchive(logA.archives[1]!, (a) => {
      [a.events[1], a.events[4]] = [a.events[4]!, a.events[1]!];
    });
    expectFailure(verify(replace(logA.archives, 1, swapped)), {
      batch_no: 2,
      event_index: 6,
      event_id: 'tenant-a-evt-9',
      reason: 'event indexes not contiguous: expected index 6, found 9',
    });
    // Renumbered, each with its own proof: the proofs no longer fit the positions.
    const renumbered = tamperArchive(logA.archives[1]!, (a) => {
      [a.events[1], a.events[4]] = [a.events[4]!, a.events[1]!];
      a.events[1]!.index = 6;
      a.events[4]!.index = 9;
    });
    expectFailure(verify(replace(logA.archives, 1, renumbered)), {
      batch_no: 2,
      event_index: 6,
      reason: 'inclusion proof does not verify against head.root',
    });
    // Renumbered with the proofs swapped back: every proof checks the leaf at its position.
    const proofsToo = tamperArchive(logA.archives[1]!, (a) => {
      const [e1, e4] = [a.events[1]!, a.events[4]!];
      a.events[1] = { ...e4, index: 6, proof: e1.proof };
      a.events[4] = { ...e1, index: 9, proof: e4.proof };
    });
    expectFailure(verify(replace(logA.archives, 1, proofsToo)), {
      batch_no: 2,
      event_index: 6,
      reason: 'inclusion proof does not verify against head.root',
    });
  });
});

describe('tampered heads and batches', () => {
  it('a forged signature: another key under the real key id, or random bytes', () => {
    const otherKey = tamperArchive(logA.archives[1]!, (a) => {
      a.signature = signHead(a.head, unpublished.secretKey);
    });
    expectFailure(verify(replace(logA.archives, 1, otherKey), []), {
      batch_no: 2,
      event_index: null,
      reason: `head signature does not verify under key ${key.keyId}`,
    });
    const random = tamperArchive(logA.archives[0]!, (a) => {
      a.signature = createHash('sha512').update('noise').digest('hex');
    });
    expectFailure(verify(replace(logA.archives, 0, random), []), {
      batch_no: 1,
      reason: `head signature does not verify under key ${key.keyId}`,
    });
  });

  it('a head signed by a key for events that arrived after the key was retired', () => {
    const retiredEarly: PublishedKeys = {
      ...keys,
      keys: keys.keys.map((k) =>
        k.key_id === key.keyId ? { ...k, retired_at: '2024-12-31T00:00:00.000Z' } : k,
      ),
    };
    const report = verify(logA.archives, logA.manifests, retiredEarly);
    expectFailure(report, { tenant_id: 'tenant-a', batch_no: 1 });
    expect(report.ok ? '' : report.reason).toMatch(/retired/);
  });

  it('a head edited after signing', () => {
    const file = tamperArchive(logA.archives[2]!, (a) => {
      a.head.to = '2030-01-01T00:00:00.000Z';
    });
    expectFailure(verify(replace(logA.archives, 2, file)), {
      batch_no: 3,
      reason: `head signature does not verify under key ${key.keyId}`,
    });
  });

  it('batch 2 replaced by a well-formed batch signed by an unpublished key', () => {
    const forger = buildLog('tenant-a', unpublished, SIZES, [
      ...logA.events.slice(0, 5),
      ...Array.from({ length: 15 }, (_, i) => eventBytes('tenant-a', 5 + i, '-forged')),
    ]);
    expectFailure(verify(replace(logA.archives, 1, forger.archives[1]!), []), {
      batch_no: 2,
      reason: `unknown key id ${unpublished.keyId}: the head is not signed by a published key`,
    });
  });

  it("batch 2 replaced by another tenant's batch 2", () => {
    const archives = replace(logA.archives, 1, { ...logB.archives[1]!, name: logA.archives[1]!.name });
    expectFailure(verify(archives, []), {
      tenant_id: 'tenant-a',
      batch_no: 3,
      file: 'tenant-a/audit/batches/000000000003.json.gz',
      reason: 'batch numbers not contiguous: 3 follows 1',
    });
    expectFailure(verify(archives), {
      tenant_id: 'tenant-a',
      batch_no: 2,
      file: 'tenant-a/audit/manifests/000000000002.json',
      reason: 'manifest of batch 2 has no archive',
    });
  });

  it('a batch missing from the middle, and a batch given twice', () => {
    expectFailure(verify([logA.archives[0]!, logA.archives[2]!], []), {
      batch_no: 3,
      reason: 'batch numbers not contiguous: 3 follows 1',
    });
    const copy = { ...logA.archives[1]!, name: 'copy/000000000002.json.gz' };
    expectFailure(verify([...logA.archives, copy]), {
      batch_no: 2,
      file: 'copy/000000000002.json.gz',
      reason: `batch 2 appears twice (also ${logA.archives[1]!.name})`,
    });
  });

  it('a rewritten batch 1, re-rooted and re-signed with an unknown key', () => {
    const rewritten = buildLog(
      'tenant-a',
      unpublished,
      [5],
      [eventBytes('tenant-a', 0), eventBytes('tenant-a', 1, '-rewritten'), ...logA.events.slice(2, 5)],
    );
    expectFailure(verify(replace(logA.archives, 0, rewritten.archives[0]!), []), {
      batch_no: 1,
      reason: `unknown key id ${unpublished.keyId}: the head is not signed by a published key`,
    });
  });

  it('a rewritten batch 1, re-signed with the real key: batch 2 no longer chains', () => {
    const rewritten = buildLog(
      'tenant-a',
      key,
      [5],
      [eventBytes('tenant-a', 0), eventBytes('tenant-a', 1, '-rewritten'), ...logA.events.slice(2, 5)],
    );
    const archives = replace(logA.archives, 0, rewritten.archives[0]!);
    expectFailure(verify(archives, []), {
      batch_no: 2,
      event_index: null,
      file: logA.archives[1]!.name,
      reason: "previous_root does not match batch 1's root",
    });
    // With the manifests, batch 1's own manifest already gives it away.
    expectFailure(verify(archives), {
      batch_no: 1,
      file: logA.manifests[0]!.name,
      reason: expect.stringContaining('manifest head does not match the head of archive'),
    });
  });

  it('a batch that does not start where the previous one ended', () => {
    // A correct log cut differently: its batch 2 starts at 4, after our batch 1 that ends at 5.
    const other = buildLog('tenant-a', key, [4, 9, 7], logA.events);
    expectFailure(verify([logA.archives[0]!, other.archives[1]!], []), {
      batch_no: 2,
      reason: "first_index 4 does not follow batch 1's tree_size 5",
    });
  });

  /** Re-signs the edited head, so that only the check under test can catch the edit. */
  const resigned = (file: EvidenceFile, change: (a: BatchArchive) => void) =>
    tamperArchive(file, (a) => {
      change(a);
      a.signature = signHead(a.head, key.secretKey);
    });

  it("a signed head whose root is not the events' tree", () => {
    const file = resigned(logA.archives[1]!, (a) => {
      a.head.root = readArchive(logA.archives[2]!).head.root;
    });
    expectFailure(verify(replace(logA.archives, 1, file), []), {
      batch_no: 2,
      event_index: 5,
      reason: 'inclusion proof does not verify against head.root',
    });
  });

  it('a frontier that does not fold to previous_root, or to the root with the leaves', () => {
    const wrongLength = tamperArchive(logA.archives[1]!, (a) => {
      a.frontier.push(a.frontier[0]!);
    });
    expectFailure(verify(replace(logA.archives, 1, wrongLength)), {
      batch_no: 2,
      reason: 'frontier has 3 hashes, first_index 5 needs 2',
    });
    const wrongHash = tamperArchive(logA.archives[1]!, (a) => {
      a.frontier[1] = 'ab'.repeat(32);
    });
    expectFailure(verify(replace(logA.archives, 1, wrongHash)), {
      batch_no: 2,
      reason: 'root of the frontier does not match previous_root',
    });
  });

  it('a consistency proof that does not verify', () => {
    const file = tamperArchive(logA.archives[2]!, (a) => {
      a.consistency[0] = 'cd'.repeat(32);
    });
    expectFailure(verify(replace(logA.archives, 2, file)), {
      batch_no: 3,
      reason: 'consistency proof from 13 to 20 does not verify',
    });
    const batchOne = tamperArchive(logA.archives[0]!, (a) => {
      a.consistency = ['cd'.repeat(32)];
    });
    expectFailure(verify(replace(logA.archives, 0, batchOne)), {
      batch_no: 1,
      reason: 'batch 1 carries a consistency proof; it must be empty',
    });
  });

  it('heads that break the batch rules, even when signed', () => {
    const noPrevious = resigned(logA.archives[1]!, (a) => {
      a.head.previous_root = null;
    });
    expectFailure(verify(replace(logA.archives, 1, noPrevious), []), {
      batch_no: 2,
      reason: 'previous_root must be null exactly when first_index is 0 (first_index 5)',
    });
    const renumbered = resigned(logA.archives[1]!, (a) => {
      a.head.batch_no = 1;
    });
    expectFailure(verify([renumbered], []), {
      batch_no: 1,
      reason: 'batch 1 must start at index 0, not 5',
    });
    const empty = resigned(logA.archives[2]!, (a) => {
      a.head.tree_size = a.head.first_index;
      a.events = [];
    });
    expectFailure(verify(replace(logA.archives, 2, empty), []), {
      batch_no: 3,
      reason: 'batch holds no events: tree_size 13, first_index 13',
    });
  });
});

describe('manifests', () => {
  it('a manifest chain break, re-signed so only the chain check sees it', () => {
    const file = tamperManifest(logA.manifests[2]!, (m) => {
      m.manifest.previous_manifest_sha256 = sha256Hex(logA.manifests[0]!.bytes);
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 2, file)), {
      batch_no: 3,
      file: logA.manifests[2]!.name,
      reason: expect.stringContaining(
        "manifest chain broken: previous_manifest_sha256 is not the SHA-256 of batch 2's manifest",
      ),
    });
    const nulled = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.previous_manifest_sha256 = null;
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, nulled)), {
      batch_no: 2,
      reason: 'manifest chain broken: previous_manifest_sha256 is null in batch 2',
    });
  });

  it('a manifest edited without re-signing, or signed by an unpublished key', () => {
    const edited = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.archive.bytes += 1;
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, edited)), {
      batch_no: 2,
      reason: `manifest signature does not verify under key ${key.keyId}`,
    });
    const unknown = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.key_id = unpublished.keyId;
      m.signature = signManifest(m.manifest, unpublished.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, unknown)), {
      batch_no: 2,
      reason: `unknown key id ${unpublished.keyId}: the manifest is not signed by a published key`,
    });
  });

  it('an archive whose bytes are not the ones the manifest names', () => {
    // Same content, other gzip bytes: every archive check passes, only the digest differs.
    const regzipped = {
      ...logA.archives[1]!,
      bytes: gzipSync(gunzipSync(logA.archives[1]!.bytes), { level: 1 }),
    };
    expect(regzipped.bytes.equals(logA.archives[1]!.bytes)).toBe(false);
    expectFailure(verify(replace(logA.archives, 1, regzipped)), {
      batch_no: 2,
      file: logA.manifests[1]!.name,
      reason: `archive sha256 does not match manifest (archive ${logA.archives[1]!.name})`,
    });
    const resized = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.archive.bytes += 1;
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, resized)), {
      batch_no: 2,
      reason: expect.stringMatching(/^archive is \d+ bytes, manifest says \d+$/),
    });
  });

  it("a manifest that names another head or signature than its archive's", () => {
    const head = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.head = { ...m.manifest.head, to: '2030-01-01T00:00:00.000Z' };
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, head)), {
      batch_no: 2,
      reason: expect.stringContaining('manifest head does not match the head of archive'),
    });
    const signature = tamperManifest(logA.manifests[1]!, (m) => {
      m.manifest.head_signature = readArchive(logA.archives[0]!).signature;
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, signature)), {
      batch_no: 2,
      reason: expect.stringContaining('manifest head_signature does not match the signature in archive'),
    });
    const first = tamperManifest(logA.manifests[0]!, (m) => {
      m.manifest.previous_manifest_sha256 = 'ab'.repeat(32);
      m.signature = signManifest(m.manifest, key.secretKey);
    });
    expectFailure(verify(logA.archives, replace(logA.manifests, 0, first)), {
      batch_no: 1,
      reason: 'manifest chain broken: batch 1 must have previous_manifest_sha256 null',
    });
  });

  it('an archive without its manifest, and a manifest given twice', () => {
    expectFailure(verify(logA.archives, logA.manifests.slice(0, 2)), {
      batch_no: 3,
      file: logA.archives[2]!.name,
      reason: 'archive of batch 3 has no manifest',
    });
    expectFailure(verify(logA.archives, [...logA.manifests, { ...logA.manifests[0]!, name: 'again.json' }]), {
      batch_no: 1,
      file: 'again.json',
      reason: expect.stringContaining('the manifest of batch 1 appears twice'),
    });
  });
});

describe('unreadable files', () => {
  it('garbage and truncated gzip', () => {
    const garbage = { name: 'garbage.json.gz', bytes: Buffer.from('not gzip at all') };
    expectFailure(verify([...logA.archives, garbage]), {
      tenant_id: null,
      batch_no: null,
      file: 'garbage.json.gz',
      reason: expect.stringContaining('archive is not valid gzip'),
    });
    const full = logA.archives[1]!;
    const truncated = { name: full.name, bytes: full.bytes.subarray(0, full.bytes.length - 10) };
    expectFailure(verify(replace(logA.archives, 1, truncated)), {
      tenant_id: null,
      file: full.name,
      reason: expect.stringContaining('archive is not valid gzip'),
    });
    const empty = { name: full.name, bytes: Buffer.alloc(0) };
    expectFailure(verify(replace(logA.archives, 1, empty)), {
      reason: expect.stringContaining('not valid gzip'),
    });
  });

  it('gzip of something that is not an archive', () => {
    const notJson = { name: 'a.json.gz', bytes: gzipSync('{"format":') };
    expectFailure(verify([notJson]), {
      file: 'a.json.gz',
      reason: expect.stringContaining('archive is not valid UTF-8 JSON'),
    });
    const notUtf8 = { name: 'b.json.gz', bytes: gzipSync(Buffer.from([0x22, 0xff, 0x22])) };
    expectFailure(verify([notUtf8]), { reason: expect.stringContaining('archive is not valid UTF-8 JSON') });
    const wrongShape = tamperArchive(logA.archives[1]!, (a) => {
      a.events[2]!.leaf = a.events[2]!.leaf.toUpperCase();
    });
    expectFailure(verify(replace(logA.archives, 1, wrongShape)), {
      tenant_id: 'tenant-a',
      batch_no: 2,
      event_index: 7,
      event_id: 'tenant-a-evt-7',
      reason: 'archive is malformed: events[2].leaf: must be 64 lowercase hex digits',
    });
    const extraField = tamperArchive(logA.archives[0]!, (a) => {
      (a.head as unknown as Record<string, unknown>)['note'] = 'x';
    });
    expectFailure(verify(replace(logA.archives, 0, extraField)), {
      batch_no: 1,
      reason: expect.stringContaining('archive is malformed: head'),
    });
    const badBase64 = tamperArchive(logA.archives[0]!, (a) => {
      a.events[0]!.bytes = `${a.events[0]!.bytes}!`;
    });
    expectFailure(verify(replace(logA.archives, 0, badBase64)), {
      event_index: 0,
      reason: 'archive is malformed: events[0].bytes: must be canonical base64',
    });
  });

  it('a malformed manifest, and the order of failures across tenants and batches', () => {
    const brokenManifest = { name: logA.manifests[1]!.name, bytes: Buffer.from('{') };
    expectFailure(verify(logA.archives, replace(logA.manifests, 1, brokenManifest)), {
      tenant_id: null,
      file: brokenManifest.name,
      reason: expect.stringContaining('manifest is not valid UTF-8 JSON'),
    });
    // A readable but malformed archive of batch 2 is reported at batch 2, before batch 3's failure
    // and instead of the missing-archive failure it causes for batch 2's manifest.
    const malformed = tamperArchive(logA.archives[1]!, (a) => {
      a.frontier = ['xyz'];
    });
    const forged = tamperArchive(logA.archives[2]!, (a) => {
      a.signature = '00'.repeat(64);
    });
    const archives = [logA.archives[0]!, forged, malformed, ...logB.archives];
    expectFailure(verify(archives), {
      tenant_id: 'tenant-a',
      batch_no: 2,
      reason: 'archive is malformed: frontier[0]: must be 64 lowercase hex digits',
    });
    // Tenants in order: tenant-a's batch 3 before tenant-b's batch 1.
    const brokenB = tamperArchive(logB.archives[0]!, (a) => {
      a.signature = '00'.repeat(64);
    });
    expectFailure(verify([brokenB, logA.archives[0]!, logA.archives[1]!, forged]), {
      tenant_id: 'tenant-a',
      batch_no: 3,
    });
  });

  it('malformed keys, a key id that is not its key, and nothing to verify', () => {
    expectFailure(
      verify(logA.archives, [], { format: KEYS_FORMAT, keys: [{}] } as unknown as PublishedKeys),
      {
        file: 'keys',
        reason: expect.stringContaining('published keys are malformed'),
      },
    );
    const lying = publish(key);
    lying.keys[0]!.public_key = unpublished.publicKey.toString('hex');
    expectFailure(verify(logA.archives, [], lying), {
      file: 'keys',
      reason: `published key ${key.keyId}: key_id is not the SHA-256 prefix of its public key`,
    });
    expectFailure(verify([], []), { reason: 'no archives to verify' });
    expectFailure(verify(logA.archives, [], publish(retired)), {
      batch_no: 1,
      reason: `unknown key id ${key.keyId}: the head is not signed by a published key`,
    });
  });

  it('never throws, whatever the bytes', () => {
    const seeds = [logA.archives[1]!.bytes, logA.manifests[1]!.bytes];
    for (let i = 0; i < 300; i++) {
      const bytes = Buffer.from(seeds[i % 2]!);
      for (let flips = 0; flips <= i % 4; flips++)
        bytes[(i * 7919 + flips * 104729) % bytes.length]! ^= 1 << (i % 8);
      const file = { name: 'fuzzed', bytes: i % 3 === 0 ? bytes.subarray(0, i * 13) : bytes };
      const report =
        i % 2 === 0 ? verify([file], []) : verify(logA.archives, replace(logA.manifests, 1, file));
      // A flip in the gzip header's time or OS byte changes nothing that is checked: ok is fine then.
      if (!report.ok) expect(report.reason).toEqual(expect.any(String));
    }
  });
});
