import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { leafHash, MerkleTree } from '../../audit/merkle.js';
import { generateSigningKey } from '../../audit/signing.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { type BatchInput, type BuiltBatch, buildBatch, subtreesOf } from './batch.js';
import { SealThread } from './seal-thread.js';

/** SPEC 1.8, 6: a batch built on the seal thread is the batch built here, byte for byte. */

const thread = new SealThread();
afterAll(() => thread.close());

const { secretKey } = generateSigningKey();
const events = Array.from({ length: 700 }, (_, i) =>
  Buffer.from(canonicalJson({ event_id: `ev_${i}`, tenant_id: 'wsp_t', n: i })),
);
const leaves = events.map((e) => leafHash(e));
const tree = new MerkleTree(leaves);

/** Batch 2 of the log: events [300, 700) after a first batch of 300, as the sealer reads them. */
const input = (): BatchInput => {
  const s0 = 300;
  const tileStart = 256;
  // The stored frontier of [0, 300): the hashes of its perfect subtrees, largest first.
  const frontier = [
    [0, 256],
    [256, 288],
    [288, 296],
    [296, 300],
  ].map(([lo, hi]) => new MerkleTree(leaves.slice(lo, hi)).root());
  return {
    tenantId: 'wsp_t',
    batchNo: 2,
    s0,
    s1: 700,
    tileStart,
    frontier: Buffer.concat(frontier),
    rows: Array.from({ length: 700 - tileStart }, (_, k) => {
      const idx = tileStart + k;
      return {
        idx,
        event_id: `ev_${idx}`,
        bytes: idx >= s0 ? events[idx]! : null,
        leaf: leaves[idx]!,
        received_at: new Date(Date.UTC(2026, 10, 29, 12, 0, 0, idx)).toISOString(),
      };
    }),
    keyId: 'key_1',
    secretKey,
    previousManifestSha: randomBytes(32),
  };
};

const plain = (b: BuiltBatch) => ({
  ...b,
  root: Buffer.from(b.root).toString('hex'),
  newFrontier: Buffer.from(b.newFrontier).toString('hex'),
  archiveBytes: Buffer.from(b.archiveBytes).toString('base64'),
  archiveSha: Buffer.from(b.archiveSha).toString('hex'),
  manifestSha: Buffer.from(b.manifestSha).toString('hex'),
  nodes: b.nodes.map((n) => ({ ...n, hash: Buffer.from(n.hash).toString('hex') })),
});

describe('SealThread', () => {
  it('builds the same bytes as this thread, and the batch is the log’s', async () => {
    const i = input();
    const here = buildBatch(i, subtreesOf(i));
    const there = await thread.build(i);
    expect(there).not.toBeNull();
    expect(plain(there!)).toEqual(plain(here));
    expect(Buffer.from(there!.root).equals(tree.root(700))).toBe(true);
    const archive = JSON.parse(gunzipSync(there!.archiveBytes).toString()) as { events: unknown[] };
    expect(archive.events).toHaveLength(400);
  });

  it('fails a batch it cannot build, and serves on; after close, the next batch starts a new thread', async () => {
    const i = input();
    await expect(thread.build({ ...i, frontier: Buffer.alloc(8) })).rejects.toThrow(/stored frontier/);
    expect(await thread.build(i)).not.toBeNull();
    const pending = expect(thread.build(i)).rejects.toThrow(/closed/);
    await thread.close();
    await pending;
    expect(await thread.build(i)).not.toBeNull();
  });

  it('fails what a thread that died or hung was building, and the next batch starts a new thread', async () => {
    const i = input();
    const dying = expect(thread.build(i)).rejects.toThrow(/exited/);
    await (thread as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await dying;
    expect(await thread.build(i)).not.toBeNull();

    const impatient = new SealThread(1);
    try {
      await expect(impatient.build(i)).rejects.toThrow(/took longer than 1 ms/);
    } finally {
      await impatient.close();
    }
  });
});
