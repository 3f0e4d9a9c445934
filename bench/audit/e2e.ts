import { archiveKey, manifestKey } from '../../src/audit/model.js';
import { verifyEvidence } from '../../src/audit/verify.js';
import type { Bus, OutgoingMessage } from '../../src/events/bus.js';
import { NatsBus } from '../../src/events/nats/bus.js';
import { PostgresBus } from '../../src/events/postgres/bus.js';
import { createPool, type Pool } from '../../src/events/postgres/pool.js';
import { filterToRegex, subjects } from '../../src/events/subjects.js';
import type { ObjectStore } from '../../src/objects/port.js';
import { AUDIT_CONSUMER, AuditConsumer } from '../../src/projections/audit/consumer.js';
import { publishedKeys } from '../../src/projections/audit/keys.js';
import { AuditSealer, type SealDeps, type SealPolicy } from '../../src/projections/audit/sealer.js';
import type { AuditEventFactory } from './events.js';
import type { CpuMeter, CpuWindow } from './meter.js';

/**
 * Phase 1: audit events over the bus into AuditConsumer and AuditSealer, as the audit role runs
 * them. Backlog (default): every event is published first, then the consumer and sealer start and
 * the clock runs until the last event is stored and until it is sealed. Live: the clock starts with
 * the first publish and the publisher (in this process, its CPU counted) runs beside them.
 */

export type BusKind = 'postgres' | 'nats';

export interface BusPhaseOptions {
  kind: BusKind;
  db: { url: string; pool: Pool };
  natsUrl: string;
  run: string;
  events: number;
  tenants: number;
  live: boolean;
  policy: SealPolicy;
  sealIntervalMs: number;
  drainTimeoutMs: number;
  objects: ObjectStore;
  masterKey: Buffer;
  /** Where batches are built: the audit role's seal thread, as `svc serve` runs it. */
  builder: SealDeps['builder'];
  makeEvent: AuditEventFactory;
  meter: CpuMeter;
  publisherApp: string;
  say: (text: string) => void;
  /** Registers clean-up that must run even when the phase fails. */
  defer: (fn: () => Promise<unknown>) => void;
}

export interface BusPhaseCheck {
  published: number;
  stored: number;
  distinctStored: number;
  publishedFound: number;
  sealed: number;
  inBatches: number;
  batchRows: number;
  /** Batches whose first_index is not the previous batch's tree_size, and logs whose indexes have gaps. */
  breaks: number;
  lost: number;
  duplicated: number;
  unsealed: number;
  evidence: string;
}

export interface BusPhaseResult {
  label: string;
  events: number;
  tenants: number;
  eventBytes: number;
  publishSeconds: number;
  storedSeconds: number | null;
  sealedSeconds: number | null;
  /** From the start of the clock to the last seal (or the timeout). */
  cpu: CpuWindow;
  batches: number;
  archiveBytes: number;
  redelivered: number;
  deadLetters: number;
  consumerErrors: string[];
  sealerErrors: string[];
  check: BusPhaseCheck;
}

const PUBLISH_BATCH = 250;
const PUBLISH_IN_FLIGHT = 8;

const openBuses = async (o: BusPhaseOptions, tag: string) => {
  if (o.kind === 'postgres') {
    const publisherPool = createPool(o.db.url, { max: PUBLISH_IN_FLIGHT, application: o.publisherApp });
    o.defer(() => publisherPool.end());
    const consumerBus = new PostgresBus(o.db.pool, { connectionString: o.db.url });
    const publisherBus = new PostgresBus(publisherPool);
    o.defer(() => Promise.all([consumerBus.close(), publisherBus.close()]));
    await consumerBus.ensureStreams();
    // The durable consumer exists before anything is published, as in production: each publish
    // fans its delivery row out then, rather than the consumer's creation copying the backlog.
    const filter = 'svc.audit.events.>';
    await o.db.pool.query('SELECT svc_bus_create_consumer($1, $2, $3)', [
      AUDIT_CONSUMER,
      filter,
      filterToRegex(filter),
    ]);
    const deadLetters = async () =>
      Number(
        (
          await o.db.pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM svc_bus_messages WHERE stream = 'dlq'",
          )
        ).rows[0]!.n,
      );
    return { consumerBus: consumerBus as Bus, publisherBus: publisherBus as Bus, deadLetters };
  }
  // The machine's JetStream is shared: the run's own stream names and subject tree, deleted after.
  const naming = { subjectPrefix: `bench_${tag}`, streamNamePrefix: `BENCH_AUDIT_${tag}_` };
  const consumerBus = new NatsBus({ servers: o.natsUrl, ...naming, connectionName: 'bench-audit' });
  const publisherBus = new NatsBus({
    servers: o.natsUrl,
    ...naming,
    connectionName: 'bench-audit-publisher',
  });
  o.defer(async () => {
    await consumerBus.deleteStreams().catch(() => {});
    await Promise.all([consumerBus.close(), publisherBus.close()]);
  });
  await consumerBus.ensureStreams();
  const deadLetters = async () => {
    const jsm = await (await consumerBus.connection()).jetstreamManager();
    return (await jsm.streams.info(`${naming.streamNamePrefix}DLQ`)).state.messages;
  };
  return { consumerBus: consumerBus as Bus, publisherBus: publisherBus as Bus, deadLetters };
};

const publishAll = async (bus: Bus, messages: OutgoingMessage[]): Promise<void> => {
  let next = 0;
  const worker = async () => {
    while (next < messages.length) {
      const from = next;
      next += PUBLISH_BATCH;
      await bus.publishMany(messages.slice(from, from + PUBLISH_BATCH));
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_IN_FLIGHT }, worker));
};

/** Stored exactly once and sealed, from the tables: audit_logs, audit_events, audit_batches. */
const checkTables = async (
  o: BusPhaseOptions,
  tenants: string[],
  publishedBy: Map<string, number>,
  eventIds: string[],
): Promise<BusPhaseCheck> => {
  const { rows } = await o.db.pool.query<{
    tenant_id: string;
    size: number;
    sealed_size: number;
    batches: number;
    stored: number;
    distinct_ids: number;
    span: number;
    in_batches: number;
    batch_rows: number;
    breaks: number;
  }>(
    `SELECT l.tenant_id, l.size, l.sealed_size, l.batches,
            e.stored, e.distinct_ids, e.span, b.in_batches, b.batch_rows, b.breaks
       FROM audit_logs l,
            LATERAL (SELECT count(*)::bigint AS stored, count(DISTINCT event_id)::bigint AS distinct_ids,
                            coalesce(max(idx) + 1, 0)::bigint AS span
                       FROM audit_events WHERE tenant_id = l.tenant_id) e,
            LATERAL (SELECT coalesce(sum(tree_size - first_index), 0)::bigint AS in_batches,
                            count(*)::bigint AS batch_rows,
                            count(*) FILTER (WHERE first_index <> prev)::bigint AS breaks
                       FROM (SELECT tree_size, first_index,
                                    lag(tree_size, 1, 0::bigint) OVER (ORDER BY batch_no) AS prev
                               FROM audit_batches WHERE tenant_id = l.tenant_id) x) b
      WHERE l.tenant_id = ANY($1)`,
    [tenants],
  );
  const found = await o.db.pool.query<{ n: number }>(
    'SELECT count(*)::bigint AS n FROM audit_events WHERE tenant_id = ANY($1) AND event_id = ANY($2)',
    [tenants, eventIds],
  );
  const sum = (f: (r: (typeof rows)[number]) => number) => rows.reduce((n, r) => n + f(r), 0);
  let lost = 0;
  let extra = 0;
  for (const t of tenants) {
    const stored = rows.find((r) => r.tenant_id === t)?.stored ?? 0;
    const expected = publishedBy.get(t) ?? 0;
    lost += Math.max(0, expected - stored);
    extra += Math.max(0, stored - expected);
  }
  const stored = sum((r) => r.stored);
  return {
    published: eventIds.length,
    stored,
    distinctStored: sum((r) => r.distinct_ids),
    publishedFound: found.rows[0]!.n,
    sealed: sum((r) => r.sealed_size),
    inBatches: sum((r) => r.in_batches),
    batchRows: sum((r) => r.batch_rows),
    breaks: sum((r) => r.breaks + (r.span === r.stored && r.size === r.stored ? 0 : 1)),
    lost: Math.max(lost, eventIds.length - found.rows[0]!.n),
    duplicated: extra + (stored - sum((r) => r.distinct_ids)),
    unsealed: sum((r) => r.size - r.sealed_size),
    evidence: await checkEvidence(o, tenants, rows, publishedBy),
  };
};

/** The sealed archives and manifests of the phase's tenants through the offline verifier. */
const checkEvidence = async (
  o: BusPhaseOptions,
  tenants: string[],
  logs: { tenant_id: string; batches: number }[],
  publishedBy: Map<string, number>,
): Promise<string> => {
  const archives = [];
  const manifests = [];
  for (const { tenant_id, batches } of logs)
    for (let b = 1; b <= batches; b++) {
      archives.push({
        name: `${tenant_id}/${archiveKey(b)}`,
        bytes: await o.objects.get(tenant_id, archiveKey(b)),
      });
      manifests.push({
        name: `${tenant_id}/${manifestKey(b)}`,
        bytes: await o.objects.get(tenant_id, manifestKey(b)),
      });
    }
  if (archives.length === 0) return 'no archives';
  const report = verifyEvidence({ keys: await publishedKeys(o.db.pool), archives, manifests });
  if (!report.ok) return `FAILED: ${report.file}: ${report.reason}`;
  const wrong = tenants.filter(
    (t) => (report.tenants.find((s) => s.tenant_id === t)?.events ?? 0) !== publishedBy.get(t),
  );
  return wrong.length === 0
    ? `ok (${archives.length} archives)`
    : `FAILED: event counts differ for ${wrong.join(', ')}`;
};

export const runBusPhase = async (o: BusPhaseOptions): Promise<BusPhaseResult> => {
  const label = o.kind === 'postgres' ? 'Postgres-table bus' : 'JetStream';
  const tag = `${o.kind === 'postgres' ? 'pg' : 'js'}${o.run}`;
  const tenants = Array.from(
    { length: o.tenants },
    (_, k) => `${o.kind === 'postgres' ? 'pg' : 'js'}_${k + 1}`,
  );
  const { consumerBus, publisherBus, deadLetters } = await openBuses(o, tag);

  const publishedBy = new Map<string, number>();
  const messages: OutgoingMessage[] = [];
  let bytes = 0;
  for (let i = 0; i < o.events; i++) {
    const tenant = tenants[i % tenants.length]!;
    const n = publishedBy.get(tenant) ?? 0;
    publishedBy.set(tenant, n + 1);
    const e = o.makeEvent(tenant, n);
    bytes += e.bytes.length;
    messages.push({ subject: subjects.audit(tenant), data: e.bytes, messageId: `audit:${e.eventId}` });
  }

  let stored = 0;
  let redelivered = 0;
  let sealed = 0;
  let batches = 0;
  let archiveBytes = 0;
  const consumerErrors: string[] = [];
  const sealerErrors: string[] = [];
  const consumer = new AuditConsumer({
    bus: consumerBus,
    pool: o.db.pool,
    onStored: (s) => {
      stored += s.appended;
      redelivered += s.duplicates;
    },
    onError: (err, context) => consumerErrors.push(`${context}: ${(err as Error).message}`),
  });
  const sealer = new AuditSealer({
    pool: o.db.pool,
    objects: o.objects,
    masterKey: o.masterKey,
    builder: o.builder,
    policy: o.policy,
    intervalMs: o.sealIntervalMs,
    onSealed: (b) => {
      sealed += b.treeSize - b.firstIndex;
      batches++;
      archiveBytes += b.archiveBytes;
    },
    onError: (err, context) => sealerErrors.push(`${context}: ${(err as Error).message}`),
  });
  o.defer(() => Promise.all([consumer.stop(), sealer.stop()]));

  let publishSeconds = 0;
  let publishing: Promise<void> = Promise.resolve();
  const publishTimed = async () => {
    const started = performance.now();
    await publishAll(publisherBus, messages);
    publishSeconds = (performance.now() - started) / 1000;
  };
  if (!o.live) {
    o.say(`${label}: publishing ${o.events.toLocaleString('en-US')} events for ${o.tenants} tenants... `);
    await publishTimed();
    o.say(`${publishSeconds.toFixed(1)} s; storing and sealing\n`);
  } else
    o.say(`${label}: publishing ${o.events.toLocaleString('en-US')} events live while storing and sealing\n`);

  const cpuBefore = await o.meter.start();
  const started = performance.now();
  if (o.live) publishing = publishTimed();
  await consumer.start();
  sealer.start();
  let storedAt: number | null = null;
  let sealedAt: number | null = null;
  let lastSay = started;
  const deadline = started + o.drainTimeoutMs;
  while (sealedAt === null && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    const now = performance.now();
    if (storedAt === null && stored >= o.events) storedAt = now;
    if (sealed >= o.events) sealedAt = now;
    if (now - lastSay >= 5_000) {
      lastSay = now;
      o.say(
        `${label}: ${((now - started) / 1000).toFixed(0)} s, stored ${stored.toLocaleString('en-US')}, sealed ${sealed.toLocaleString('en-US')} in ${batches} batches\n`,
      );
    }
  }
  const cpu = await o.meter.since(cpuBefore);
  await publishing;
  await Promise.all([consumer.stop(), sealer.stop()]);
  const seconds = (at: number | null) => (at === null ? null : (at - started) / 1000);
  o.say(
    `${label}: stored in ${seconds(storedAt)?.toFixed(1) ?? 'NOT within the timeout'} s, sealed in ${seconds(sealedAt)?.toFixed(1) ?? 'NOT within the timeout'} s; checking the tables and the evidence... `,
  );
  const check = await checkTables(
    o,
    tenants,
    publishedBy,
    messages.map((m) => m.messageId.slice('audit:'.length)),
  );
  o.say(`${check.evidence}\n`);
  return {
    label,
    events: o.events,
    tenants: o.tenants,
    eventBytes: bytes / o.events,
    publishSeconds,
    storedSeconds: seconds(storedAt),
    sealedSeconds: seconds(sealedAt),
    cpu,
    batches,
    archiveBytes,
    redelivered,
    deadLetters: await deadLetters(),
    consumerErrors,
    sealerErrors,
    check,
  };
};
