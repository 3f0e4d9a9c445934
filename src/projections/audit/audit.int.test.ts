import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/gateway-env.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/postgres.js';
import { leafHash, MerkleTree, verifyConsistency, verifyInclusion } from '../../audit/merkle.js';
import { archiveKey, type BatchArchive, manifestKey } from '../../audit/model.js';
import { verifyEvidence } from '../../audit/verify.js';
import { PostgresBus } from '../../events/postgres/bus.js';
import type { Pool } from '../../events/postgres/pool.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { FsObjectStore } from '../../objects/fs-store.js';
import type { ObjectStore } from '../../objects/port.js';
import { AuditConsumer } from './consumer.js';
import { publishedKeys, rotateSigningKey } from './keys.js';
import { appendAuditEvents, type IncomingAuditEvent } from './log.js';
import { AuditReads } from './reads.js';
import { dueTenants, sealNextBatch } from './sealer.js';

/** SPEC 1.8, 4.8, 6: the audit log, sealing and proofs against a real PostgreSQL and object store. */

let db: TestDatabase;
let dir: string;
let objects: FsObjectStore;
const masterKey = randomBytes(32);

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'svc-audit-'));
  objects = new FsObjectStore(dir);
});

afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const eventOf = (
  tenantId: string,
  eventId: string,
  extra: Record<string, unknown> = {},
): IncomingAuditEvent => ({
  tenantId,
  eventId,
  bytes: Buffer.from(
    canonicalJson({ event_id: eventId, tenant_id: tenantId, action: 'test.done', ...extra }),
  ),
});

const eventsOf = (tenantId: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => eventOf(tenantId, `ev_${from + i}`, { n: from + i }));

const sealAll = async (tenantId: string, maxEvents: number, store: ObjectStore = objects) => {
  const sealed = [];
  for (;;) {
    const b = await sealNextBatch({ pool: db.pool, objects: store, masterKey }, tenantId, {
      maxEvents,
      maxAgeMs: 0,
    });
    if (!b) return sealed;
    sealed.push(b);
  }
};

const evidenceOf = async (tenantId: string, batches: number) => {
  const archives = [];
  const manifests = [];
  for (let b = 1; b <= batches; b++) {
    archives.push({ name: archiveKey(b), bytes: await objects.get(tenantId, archiveKey(b)) });
    manifests.push({ name: manifestKey(b), bytes: await objects.get(tenantId, manifestKey(b)) });
  }
  return { keys: await publishedKeys(db.pool), archives, manifests };
};

describe('inclusion proofs (SPEC 4.8 GetInclusionProof; issue 22: a proof under 5 ms)', () => {
  // Every log holds the 5,000 events of wsp_proofs, so one tree checks them all; sealed in heads of
  // 700 (then 300): stored nodes up to level 12, heads on and off tile boundaries, right edges of
  // every shape.
  const appended = (t: string) =>
    appendAuditEvents(
      db.pool,
      eventsOf('wsp_proofs', 5000).map((e) => ({ ...e, tenantId: t })),
    );
  const sealedLog = async (t: string) => {
    await appended(t);
    const sizes = (await sealAll(t, 700)).map((b) => b.treeSize);
    expect(sizes.at(-1)).toBe(5000);
    return sizes;
  };
  /** What a sealer from before migration 0024 leaves: no subtrees under 256 leaves, no small_nodes_from. */
  const forgetSmallNodes = async (t: string) => {
    await db.pool.query('DELETE FROM audit_nodes WHERE tenant_id = $1 AND level < 8', [t]);
    await db.pool.query('UPDATE audit_logs SET small_nodes_from = NULL WHERE tenant_id = $1', [t]);
  };
  const tree = new MerkleTree(eventsOf('wsp_proofs', 5000).map((e) => leafHash(e.bytes)));
  /** Every proof of the log checked against the tree; the most statements one took. */
  const proveAll = async (t: string, sizes: number[]) => {
    let statements = 0;
    let most = 0;
    const counting = {
      query: (...args: Parameters<Pool['query']>) => {
        statements++;
        return (db.pool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as Pool;
    const reads = new AuditReads(counting, objects);
    for (const i of [
      0, 1, 15, 16, 255, 256, 511, 512, 699, 700, 704, 719, 720, 767, 768, 1023, 1024, 2047, 2800, 4095, 4096,
      4200, 4999,
    ]) {
      for (const size of [undefined, ...sizes.filter((s) => s > i)]) {
        statements = 0;
        const p = await reads.inclusionProof(t, `ev_${i}`, size);
        expect(p.proof, `event ${i} in tree size ${p.tree_size}`).toEqual(
          tree.inclusionProof(i, p.tree_size).map((h: Buffer) => h.toString('hex')),
        );
        most = Math.max(most, statements);
      }
    }
    return most;
  };

  it('are read in one statement from a sound log, for any event and any later head', async () => {
    const t = 'wsp_proofs';
    const sizes = await sealedLog(t);
    expect(await proveAll(t, sizes)).toBe(1);
  });

  it('are read in one statement from a log sealed before subtrees under 256 leaves were stored (migration 0024)', async () => {
    const old = 'wsp_proofs_old';
    const oldSizes = await sealedLog(old);
    await forgetSmallNodes(old);
    expect(await proveAll(old, oldSizes)).toBe(1);

    // Sealed partly before: the first batch as before migration 0024, the rest by this sealer,
    // which says from where it stored them.
    const mixed = 'wsp_proofs_mixed';
    await appended(mixed);
    await sealNextBatch({ pool: db.pool, objects, masterKey }, mixed, { maxEvents: 700, maxAgeMs: 0 });
    await forgetSmallNodes(mixed);
    const mixedSizes = [700, ...(await sealAll(mixed, 700)).map((b) => b.treeSize)];
    const { rows } = await db.pool.query('SELECT small_nodes_from FROM audit_logs WHERE tenant_id = $1', [
      mixed,
    ]);
    expect(Number(rows[0].small_nodes_from)).toBe(700);
    expect(await proveAll(mixed, mixedSizes)).toBe(1);
  });

  it('are right, in a few more statements, when stored subtrees under 256 leaves are missing', async () => {
    // A sealer of an older version sealing beside a newer one leaves small_nodes_from set and these out.
    const t = 'wsp_proofs_gaps';
    const sizes = await sealedLog(t);
    await db.pool.query('DELETE FROM audit_nodes WHERE tenant_id = $1 AND level < 8 AND idx % 3 = 0', [t]);
    expect(await proveAll(t, sizes)).toBeLessThanOrEqual(3);
  });
});

describe('the audit log', () => {
  it('stores each event once per tenant, gap-free, whatever the message ids and redeliveries', async () => {
    const bus = new PostgresBus(db.pool, { connectionString: db.url, pollMs: 20 });
    await bus.ensureStreams();
    const t = 'wsp_dedupe';
    const publish = (e: IncomingAuditEvent, messageId: string) =>
      bus.publish(`svc.audit.events.${e.tenantId}`, e.bytes, { messageId });
    const [a, b, c] = eventsOf(t, 3);
    await publish(a!, 'm1');
    await publish(a!, 'm2'); // the same event under another message id: past the bus's dedupe
    await publish(b!, 'm3');
    // Invalid: another tenant in the body, not JSON, no event id; dead-lettered, never stored.
    await bus.publish(`svc.audit.events.${t}`, canonicalJson({ event_id: 'x', tenant_id: 'wsp_other' }), {
      messageId: 'bad1',
    });
    await bus.publish(`svc.audit.events.${t}`, '{not json', { messageId: 'bad2' });
    await bus.publish(`svc.audit.events.${t}`, canonicalJson({ tenant_id: t }), { messageId: 'bad3' });
    await publish(c!, 'm4');
    // The first store fails after the messages were taken: they come back and are stored once.
    let failFirst = true;
    const flaky = Object.create(db.pool, {
      connect: {
        value: async () => {
          if (failFirst) {
            failFirst = false;
            throw new Error('database away for a moment');
          }
          return db.pool.connect();
        },
      },
    }) as typeof db.pool;
    const consumer = new AuditConsumer({ bus, pool: flaky, ackWaitMs: 500, flushIntervalMs: 10 });
    try {
      await consumer.start();
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await db.pool.query(
          'SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1',
          [t],
        );
        if (rows[0].n >= 3 || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // Past ack_wait: anything redelivered would have come back by now.
      await new Promise((r) => setTimeout(r, 700));
    } finally {
      await consumer.stop();
      await bus.close();
    }
    expect(failFirst).toBe(false);
    const { rows } = await db.pool.query(
      'SELECT idx::int, event_id, bytes FROM audit_events WHERE tenant_id = $1 ORDER BY idx',
      [t],
    );
    // Gap-free indexes, each event once. Arrival order is the order of storing: the batch whose
    // store failed comes back after ev_2 may already be stored, so the ids' order is not asserted.
    expect(rows.map((r) => r.idx)).toEqual([0, 1, 2]);
    expect(rows.map((r) => r.event_id).sort()).toEqual(['ev_0', 'ev_1', 'ev_2']);
    const storedA = rows.find((r) => r.event_id === 'ev_0')!;
    expect(Buffer.compare(storedA.bytes, Buffer.from(a!.bytes))).toBe(0);
    const log = await db.pool.query('SELECT size::int FROM audit_logs WHERE tenant_id = $1', [t]);
    expect(log.rows[0].size).toBe(3);
  });

  it('keeps the first event of an id and counts other bytes under it as a conflict, not a redelivery', async () => {
    const t = 'wsp_conflict';
    const first = eventOf(t, 'ev_same', { v: 1 });
    expect(await appendAuditEvents(db.pool, [first])).toEqual({ appended: 1, duplicates: 0, conflicts: 0 });
    const other = eventOf(t, 'ev_same', { v: 2 });
    expect(await appendAuditEvents(db.pool, [first, other, eventOf(t, 'ev_next')])).toEqual({
      appended: 1,
      duplicates: 2,
      conflicts: 1,
    });
    const { rows } = await db.pool.query(
      'SELECT bytes FROM audit_events WHERE tenant_id = $1 AND event_id = $2',
      [t, 'ev_same'],
    );
    expect(Buffer.from(rows[0].bytes).equals(Buffer.from(first.bytes))).toBe(true);
  });

  it('seals batches whose roots, proofs from storage and archives verify, across stored subtrees', async () => {
    const t = 'wsp_seal';
    // 1,000 events in uneven appends: crosses tiles of 256 and the 512 subtree.
    for (const [from, n] of [
      [0, 1],
      [1, 254],
      [255, 2],
      [257, 600],
      [857, 143],
    ] as const)
      await appendAuditEvents(db.pool, eventsOf(t, n, from));
    const sealed = await sealAll(t, 300);
    expect(sealed.map((b) => [b.batchNo, b.firstIndex, b.treeSize])).toEqual([
      [1, 0, 300],
      [2, 300, 600],
      [3, 600, 900],
      [4, 900, 1000],
    ]);
    const leaves = eventsOf(t, 1000).map((e) => leafHash(e.bytes));
    const tree = new MerkleTree(leaves);
    for (const b of sealed) expect(b.root).toBe(tree.root(b.treeSize).toString('hex'));

    const reads = new AuditReads(db.pool, objects);
    for (const [i, size] of [
      [0, undefined],
      [255, undefined],
      [256, 1000],
      [511, 600],
      [599, undefined],
      [999, undefined],
      [3, 1000],
    ] as const) {
      const p = await reads.inclusionProof(t, `ev_${i}`, size);
      expect(p.index).toBe(i);
      expect(p.proof).toEqual(tree.inclusionProof(i, p.tree_size).map((h: Buffer) => h.toString('hex')));
      expect(
        verifyInclusion(
          i,
          p.tree_size,
          leaves[i]!,
          p.proof.map((h) => Buffer.from(h, 'hex')),
          Buffer.from(p.root, 'hex'),
        ),
      ).toBe(true);
    }
    const c = await reads.consistencyProof(t, 300, 1000);
    expect(
      verifyConsistency(
        300,
        1000,
        Buffer.from(c.from.root, 'hex'),
        Buffer.from(c.to.root, 'hex'),
        c.proof.map((h) => Buffer.from(h, 'hex')),
      ),
    ).toBe(true);
    await expect(reads.inclusionProof(t, 'ev_5', 450)).rejects.toThrow(
      /no audit batch ends at tree size 450/,
    );
    await expect(reads.inclusionProof('wsp_other', 'ev_5')).rejects.toThrow(/no audit event/);
    await expect(reads.inclusionProof(t, 'ev_700', 600)).rejects.toThrow(
      /tree size 600 does not include event "ev_700" \(index 700\)/,
    );
    await appendAuditEvents(db.pool, eventsOf('wsp_seal_pending', 1));
    for (const size of [undefined, 1])
      await expect(reads.inclusionProof('wsp_seal_pending', 'ev_0', size)).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/not sealed yet/),
      });

    const report = verifyEvidence(await evidenceOf(t, 4));
    expect(report).toMatchObject({ ok: true });
    const archiveText = gunzipSync(await objects.get(t, archiveKey(2))).toString();
    const archive = JSON.parse(archiveText) as BatchArchive;
    // The archive is the canonical JSON its format names (model.ts), byte for byte.
    expect(archiveText).toBe(canonicalJson(archive));
    expect(archive.events).toHaveLength(300);
    expect(archive.head).toMatchObject({ batch_no: 2, first_index: 300, tree_size: 600 });
  });

  it('a seal that dies before its commit seals nothing, and the retry writes the same archive bytes', async () => {
    const t = 'wsp_crash';
    await appendAuditEvents(db.pool, eventsOf(t, 40));
    // Batch 1 of 25 events; 15 left for batch 2.
    await sealNextBatch({ pool: db.pool, objects, masterKey }, t, { maxEvents: 25, maxAgeMs: 0 });
    let archiveAtCrash: Buffer | null = null;
    const dying: ObjectStore = Object.create(objects, {
      put: {
        value: async (org: string, key: string, data: Uint8Array | string) => {
          if (key === manifestKey(2)) {
            archiveAtCrash = await objects.get(org, archiveKey(2));
            throw new Error('process killed here');
          }
          return objects.put(org, key, data);
        },
      },
    });
    await expect(sealAll(t, 25, dying)).rejects.toThrow('process killed here');
    const log = await db.pool.query(
      'SELECT sealed_size::int, batches::int FROM audit_logs WHERE tenant_id = $1',
      [t],
    );
    expect(log.rows[0]).toEqual({ sealed_size: 25, batches: 1 });
    expect(archiveAtCrash).not.toBeNull();
    await sealAll(t, 25);
    const after = await objects.get(t, archiveKey(2));
    expect(createHash('sha256').update(after).digest('hex')).toBe(
      createHash('sha256').update(archiveAtCrash!).digest('hex'),
    );
    const batches = await db.pool.query(
      'SELECT batch_no::int FROM audit_batches WHERE tenant_id = $1 ORDER BY 1',
      [t],
    );
    expect(batches.rows.map((r) => r.batch_no)).toEqual([1, 2]);
    expect(verifyEvidence(await evidenceOf(t, 2))).toMatchObject({ ok: true });
  });

  it('two sealers at once seal each event once, in contiguous batches', async () => {
    const t = 'wsp_race';
    await appendAuditEvents(db.pool, eventsOf(t, 90));
    await Promise.all([sealAll(t, 20), sealAll(t, 20), sealAll(t, 20)]);
    const { rows } = await db.pool.query(
      'SELECT batch_no::int, first_index::int, tree_size::int FROM audit_batches WHERE tenant_id = $1 ORDER BY batch_no',
      [t],
    );
    let expected = 0;
    for (const [i, r] of rows.entries()) {
      expect(r.batch_no).toBe(i + 1);
      expect(r.first_index).toBe(expected);
      expected = r.tree_size;
    }
    expect(expected).toBe(90);
  });

  it('an append that commits while a seal waits on its row still leaves the tenant due (oldest_unsealed_at kept)', async () => {
    // Found by CI: the seal's UPDATE read the next event's arrival time with a snapshot from before the
    // append committed, set oldest_unsealed_at to NULL, and the tenant's last events (fewer than a
    // batch) were never due again.
    const t = 'wsp_seal_append_race';
    await appendAuditEvents(db.pool, eventsOf(t, 1));
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // The append holds the log row's lock and waits before its COMMIT.
    const gated = {
      connect: async () => {
        const client = await db.pool.connect();
        const query = client.query.bind(client) as (...a: unknown[]) => Promise<unknown>;
        return new Proxy(client, {
          get: (target, key) =>
            key === 'query'
              ? async (...a: unknown[]) => {
                  if (a[0] === 'COMMIT') await gate;
                  return query(...a);
                }
              : Reflect.get(target, key),
        });
      },
    } as unknown as Pool;
    const appending = appendAuditEvents(gated, eventsOf(t, 1, 1));
    const waitFor = (sql: string) =>
      eventually(async () => (await db.pool.query(sql)).rows.length > 0, 5_000, sql);
    let sealing: ReturnType<typeof sealNextBatch>;
    try {
      await waitFor(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE 'UPDATE audit_logs SET size%'",
      );
      sealing = sealNextBatch({ pool: db.pool, objects, masterKey }, t, { maxEvents: 4, maxAgeMs: 0 });
      await waitFor(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE audit_logs SET sealed_size%'",
      );
    } finally {
      // A wait that timed out must not leave the append's transaction open for the teardown to hang on.
      release();
    }
    await appending;
    expect(await sealing).toMatchObject({ firstIndex: 0, treeSize: 1 });
    const { rows } = await db.pool.query(
      'SELECT size::int, sealed_size::int, oldest_unsealed_at FROM audit_logs WHERE tenant_id = $1',
      [t],
    );
    expect(rows[0]).toMatchObject({ size: 2, sealed_size: 1 });
    expect(rows[0].oldest_unsealed_at).not.toBeNull();
    expect(await dueTenants(db.pool, { maxEvents: 4, maxAgeMs: 0 })).toContain(t);
    expect(await sealAll(t, 4)).toMatchObject([{ firstIndex: 1, treeSize: 2 }]);
  });

  it('after a key rotation new heads are signed by the new key and old ones still verify', async () => {
    const t = 'wsp_rotate';
    await appendAuditEvents(db.pool, eventsOf(t, 10));
    await sealAll(t, 10);
    const rotated = await rotateSigningKey(db.pool, masterKey);
    await appendAuditEvents(db.pool, eventsOf(t, 10, 10));
    await sealAll(t, 10);
    const reads = new AuditReads(db.pool, objects);
    const batches = (await reads.batches(t)).data;
    expect(batches.map((b) => b.key_id)).toEqual([rotated.retired, rotated.active]);
    const keys = await publishedKeys(db.pool);
    expect(keys.keys.find((k) => k.key_id === rotated.retired)?.retired_at).not.toBeNull();
    expect(verifyEvidence(await evidenceOf(t, 2))).toMatchObject({ ok: true });
  });
});
