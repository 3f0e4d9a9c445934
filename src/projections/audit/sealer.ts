import { archiveKey, manifestKey } from '../../audit/model.js';
import { type Pool, withTransaction } from '../../events/postgres/pool.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import type { ObjectStore } from '../../objects/port.js';
import { type BatchInput, type BuiltBatch, buildBatch, subtreesOf } from './batch.js';
import { activeSigningKey } from './keys.js';
import { computeWith, TILE } from './subtrees.js';

/**
 * Sealing (SPEC 1.8, 6): per tenant, the events past the last batch become the next batch once
 * there are `maxEvents` of them or the oldest has waited `maxAgeMs`, whichever comes first. A batch
 * head is a signed tree head of the tenant's whole log (RFC 9162), so the consistency proof between
 * two heads shows the later extends the earlier. One transaction per batch, under a per-tenant
 * advisory lock: the archive and manifest are written to the object store first (same bytes on a
 * retry: ed25519 is deterministic and nothing in them reads the clock), then the batch row, the
 * new subtree hashes and the log's sealed size commit together. A crash before the commit leaves
 * an archive that the next attempt overwrites with the same bytes; nothing is sealed twice.
 */

export interface SealPolicy {
  maxEvents: number;
  maxAgeMs: number;
}

export interface SealDeps {
  pool: Pool;
  objects: ObjectStore;
  masterKey: Buffer;
  /** Builds a batch elsewhere (a worker thread); null asks this thread to build it. */
  builder?: (input: BatchInput) => Promise<BuiltBatch | null>;
}

export interface SealedBatch {
  tenantId: string;
  batchNo: number;
  firstIndex: number;
  treeSize: number;
  root: string;
  archiveBytes: number;
}

const DUE = `size > sealed_size
  AND (size - sealed_size >= $1 OR oldest_unsealed_at <= clock_timestamp() - $2 * interval '1 millisecond')`;

/** Tenants with a batch due now, oldest waiting first. */
export const dueTenants = async (pool: Pool, policy: SealPolicy, limit = 100): Promise<string[]> => {
  const { rows } = await pool.query<{ tenant_id: string }>(
    `SELECT tenant_id FROM audit_logs WHERE ${DUE} ORDER BY oldest_unsealed_at LIMIT $3`,
    [policy.maxEvents, policy.maxAgeMs, limit],
  );
  return rows.map((r) => r.tenant_id);
};

const isDue = async (pool: Pool, policy: SealPolicy, tenantId: string): Promise<boolean> => {
  const { rows } = await pool.query(`SELECT 1 FROM audit_logs WHERE tenant_id = $3 AND ${DUE}`, [
    policy.maxEvents,
    policy.maxAgeMs,
    tenantId,
  ]);
  return rows.length > 0;
};

interface LogRow {
  size: string;
  sealed_size: string;
  batches: string;
  frontier: Buffer;
  manifest_sha256: Buffer | null;
}

interface EventRow {
  idx: string;
  event_id: string;
  bytes: Buffer | null;
  leaf: Buffer;
  received_at: Date;
}

/** Seals the next batch of one tenant; null when another process holds it or nothing is unsealed. */
export const sealNextBatch = (
  deps: SealDeps,
  tenantId: string,
  policy: SealPolicy,
): Promise<SealedBatch | null> =>
  withTransaction(deps.pool, async (client) => {
    const lock = await client.query<{ ok: boolean }>(
      "SELECT pg_try_advisory_xact_lock(hashtext('svc.audit.seal'), hashtext($1)) AS ok",
      [tenantId],
    );
    if (!lock.rows[0]?.ok) return null;
    const log = (
      await client.query<LogRow>(
        'SELECT size, sealed_size, batches, frontier, manifest_sha256 FROM audit_logs WHERE tenant_id = $1',
        [tenantId],
      )
    ).rows[0];
    if (!log) return null;
    const s0 = Number(log.sealed_size);
    const size = Number(log.size);
    if (size <= s0) return null;
    const s1 = s0 + Math.min(policy.maxEvents, size - s0);
    const batchNo = Number(log.batches) + 1;
    const tileStart = Math.floor(s0 / TILE) * TILE;

    const { rows } = await client.query<EventRow>(
      `SELECT idx, event_id, CASE WHEN idx >= $2 THEN bytes END AS bytes, leaf, received_at
         FROM audit_events WHERE tenant_id = $1 AND idx >= $3 AND idx < $4 ORDER BY idx`,
      [tenantId, s0, tileStart, s1],
    );
    if (rows.length !== s1 - tileStart)
      throw new Error(`audit log of ${tenantId} is missing events in [${tileStart}, ${s1})`);

    const key = await activeSigningKey(client, deps.masterKey);
    const input: BatchInput = {
      tenantId,
      batchNo,
      s0,
      s1,
      tileStart,
      frontier: log.frontier,
      rows: rows.map((r) => ({
        idx: Number(r.idx),
        event_id: r.event_id,
        bytes: r.bytes,
        leaf: r.leaf,
        received_at: r.received_at.toISOString(),
      })),
      keyId: key.keyId,
      secretKey: key.secretKey,
      previousManifestSha: log.manifest_sha256,
    };
    // Off this thread when a builder is given (the audit role's worker); a batch whose proofs need a
    // subtree the input lacks (never in a sound log) is built here, where storage can fill it in.
    let built = await deps.builder?.(input);
    if (!built) {
      const subtrees = subtreesOf(input);
      built = await computeWith(client, tenantId, subtrees, () => buildBatch(input, subtrees));
    }
    const { archiveBytes, manifestFile, manifestSha, nodes } = built;

    await deps.objects.put(tenantId, archiveKey(batchNo), archiveBytes);
    await deps.objects.put(tenantId, manifestKey(batchNo), manifestFile);

    if (nodes.length > 0)
      await client.query(
        `INSERT INTO audit_nodes (tenant_id, level, idx, hash)
         SELECT $1, t.level, t.idx, t.hash FROM unnest($2::smallint[], $3::bigint[], $4::bytea[]) AS t(level, idx, hash)
         ON CONFLICT DO NOTHING`,
        [
          tenantId,
          nodes.map((n) => Math.log2(n.hi - n.lo)),
          nodes.map((n) => n.lo / (n.hi - n.lo)),
          nodes.map((n) => n.hash),
        ],
      );
    await client.query(
      `INSERT INTO audit_batches (tenant_id, batch_no, first_index, tree_size, root, head, signature, key_id,
                                  manifest_sha256, archive_sha256, archive_bytes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        tenantId,
        batchNo,
        s0,
        s1,
        built.root,
        canonicalJson(built.head),
        built.signature,
        key.keyId,
        manifestSha,
        built.archiveSha,
        archiveBytes.length,
      ],
    );
    // An append may commit while this UPDATE waits on the row: the row's size is then re-read, but
    // the subquery keeps this statement's snapshot and misses the new event. Left NULL, the tenant's
    // last events would never be due by age, so their wait is counted from now instead.
    await client.query(
      `UPDATE audit_logs SET sealed_size = $2, batches = $3, frontier = $4, manifest_sha256 = $5,
              small_nodes_from = COALESCE(small_nodes_from, $6),
              oldest_unsealed_at = CASE WHEN size > $2 THEN COALESCE(
                (SELECT received_at FROM audit_events WHERE tenant_id = $1 AND idx = $2), clock_timestamp()) END
        WHERE tenant_id = $1`,
      [tenantId, s1, batchNo, built.newFrontier, manifestSha, s0],
    );
    return {
      tenantId,
      batchNo,
      firstIndex: s0,
      treeSize: s1,
      root: built.root.toString('hex'),
      archiveBytes: archiveBytes.length,
    };
  });

export interface AuditSealerOptions extends SealDeps {
  policy: SealPolicy;
  intervalMs: number;
  onSealed?: (batch: SealedBatch) => void;
  onError?: (err: unknown, context: string) => void;
}

/**
 * Looks for due tenants every `intervalMs` and seals their batches; a tenant with more than one
 * batch's worth waiting is sealed batch after batch in the same round. Several processes may run
 * one each: the per-tenant lock lets one seal and the others pass.
 */
export class AuditSealer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** The last sealing failure; cleared by a round that succeeds. For /healthz. */
  lastError: unknown = null;

  constructor(private readonly o: AuditSealerOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One round: every due tenant sealed until none of it is due. */
  async runOnce(): Promise<SealedBatch[]> {
    const sealed: SealedBatch[] = [];
    for (const tenantId of await dueTenants(this.o.pool, this.o.policy)) {
      for (;;) {
        if (this.stopped) return sealed;
        const batch = await sealNextBatch(this.o, tenantId, this.o.policy);
        if (!batch) break;
        sealed.push(batch);
        this.o.onSealed?.(batch);
        if (!(await isDue(this.o.pool, this.o.policy, tenantId))) break;
      }
    }
    return sealed;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce().then(
        () => {
          this.lastError = null;
        },
        (err: unknown) => {
          this.lastError = err;
          this.o.onError?.(err, 'seal audit batches');
        },
      );
      void this.running.finally(() => this.schedule());
    }, this.o.intervalMs);
    this.timer.unref();
  }
}
