import { leafHash } from '../../audit/merkle.js';
import { type Pool, type PoolClient, withTransaction } from '../../events/postgres/pool.js';

/** One audit event as it arrived: its tenant (from the subject), id and canonical bytes. */
export interface IncomingAuditEvent {
  tenantId: string;
  eventId: string;
  bytes: Uint8Array;
}

export interface AppendResult {
  /** Events stored now, by tenant. */
  appended: number;
  /** Events already in their tenant's log (redelivered or published twice). */
  duplicates: number;
  /**
   * Of the duplicates, those whose bytes differ from the stored event of the same id: the first
   * stored stays (it may be sealed already); a producer sending two events under one id is a bug or
   * an attack, so the caller raises it.
   */
  conflicts: number;
}

const concat = (parts: readonly Uint8Array[]) => {
  const starts: number[] = [];
  const lengths: number[] = [];
  let at = 1;
  for (const p of parts) {
    starts.push(at);
    lengths.push(p.byteLength);
    at += p.byteLength;
  }
  return { bytes: Buffer.concat(parts), starts, lengths };
};

const appendTenant = async (
  client: PoolClient,
  tenantId: string,
  events: readonly IncomingAuditEvent[],
): Promise<AppendResult> => {
  await client.query('INSERT INTO audit_logs (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING', [tenantId]);
  // The row lock orders every append of this tenant: indexes are assigned gap-free, and an event id
  // already in the log (checked under the same lock) is never stored twice.
  const { rows } = await client.query<{ size: string; last: Date | null }>(
    `SELECT l.size, (SELECT e.received_at FROM audit_events e WHERE e.tenant_id = l.tenant_id AND e.idx = l.size - 1) AS last
       FROM audit_logs l WHERE l.tenant_id = $1 FOR UPDATE OF l`,
    [tenantId],
  );
  const size = Number(rows[0]!.size);
  // Arrival times never run backwards within a log (a clock stepped back by NTP included): batch
  // time ranges follow one another, which the offline verifier checks.
  const last = rows[0]!.last;
  const ids = [...new Set(events.map((e) => e.eventId))];
  // A join on unnest, not `= ANY`: PostgreSQL then looks each id up in the unique index even before
  // the table has statistics, where `= ANY` scanned the tenant's whole log (bench:audit).
  const existing = await client.query<{ event_id: string; leaf: Buffer }>(
    `SELECT e.event_id, e.leaf FROM unnest($2::text[]) AS u(id)
       JOIN audit_events e ON e.tenant_id = $1 AND e.event_id = u.id`,
    [tenantId, ids],
  );
  const seen = new Map(existing.rows.map((r) => [r.event_id, r.leaf]));
  const fresh: IncomingAuditEvent[] = [];
  const freshLeaves: Buffer[] = [];
  let conflicts = 0;
  for (const e of events) {
    const leaf = leafHash(e.bytes);
    const stored = seen.get(e.eventId);
    if (stored) {
      if (!stored.equals(leaf)) conflicts++;
      continue;
    }
    seen.set(e.eventId, leaf);
    fresh.push(e);
    freshLeaves.push(leaf);
  }
  if (fresh.length === 0) return { appended: 0, duplicates: events.length, conflicts };
  const payload = concat(fresh.map((e) => e.bytes));
  const leaves = Buffer.concat(freshLeaves);
  // Bytes and leaves travel as two bytea parameters (binary), cut back by offset in the statement.
  await client.query(
    `INSERT INTO audit_events (tenant_id, idx, event_id, bytes, leaf, received_at)
     SELECT $1, $2::bigint + t.n - 1, t.event_id,
            substring($4::bytea FROM t.start FOR t.len),
            substring($5::bytea FROM (t.n::int - 1) * 32 + 1 FOR 32),
            GREATEST(clock_timestamp(), $8::timestamptz)
       FROM unnest($3::text[], $6::int[], $7::int[]) WITH ORDINALITY AS t(event_id, start, len, n)`,
    [
      tenantId,
      size,
      fresh.map((e) => e.eventId),
      payload.bytes,
      leaves,
      payload.starts,
      payload.lengths,
      last,
    ],
  );
  await client.query(
    `UPDATE audit_logs SET size = size + $2,
            oldest_unsealed_at = COALESCE(oldest_unsealed_at, clock_timestamp())
      WHERE tenant_id = $1`,
    [tenantId, fresh.length],
  );
  return { appended: fresh.length, duplicates: events.length - fresh.length, conflicts };
};

/**
 * Appends events to their tenants' logs in one transaction, in the order given (arrival order).
 * Tenants are locked in id order, so two processes appending for the same tenants never deadlock.
 * Resolves once committed: the caller acknowledges the messages only then.
 */
export const appendAuditEvents = (pool: Pool, events: readonly IncomingAuditEvent[]): Promise<AppendResult> =>
  withTransaction(pool, async (client) => {
    const byTenant = new Map<string, IncomingAuditEvent[]>();
    for (const e of events) {
      const list = byTenant.get(e.tenantId);
      if (list) list.push(e);
      else byTenant.set(e.tenantId, [e]);
    }
    const total: AppendResult = { appended: 0, duplicates: 0, conflicts: 0 };
    for (const tenantId of [...byTenant.keys()].sort()) {
      const r = await appendTenant(client, tenantId, byTenant.get(tenantId)!);
      total.appended += r.appended;
      total.duplicates += r.duplicates;
      total.conflicts += r.conflicts;
    }
    return total;
  });
