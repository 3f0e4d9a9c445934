import type { Bus, BusMessage } from '../../events/bus.js';
import type { Pool } from '../../events/postgres/pool.js';
import { isCanonicalJsonText } from '../../lib/canonical-json.js';
import { nestsDeeperThan } from '../../lib/json-depth.js';
import { MAX_STORABLE_DEPTH, unstorableText } from '../../lib/storable.js';
import { isOrgId } from '../../objects/port.js';
import { BatchedConsumer, type Held } from '../batched-consumer.js';
import { type AppendResult, appendAuditEvents, type IncomingAuditEvent } from './log.js';

/**
 * The audit role's consumer (SPEC 6: `svc.audit.events.<tenant_id>`, ARCHITECTURE.md roles): a
 * durable consumer that stores each event's canonical bytes in its tenant's log and acks only once
 * the store committed. Redelivered and duplicated messages dedupe on the event id (log.ts). A
 * message that is not an audit event of the tenant its subject names is dead-lettered at once
 * (`invalid_event`); a store that is down leaves the batch for redelivery.
 */

export const AUDIT_CONSUMER = 'audit-log';
const PREFIX = 'svc.audit.events.';
/** Longest event id kept; the producers' ids are far shorter (`audit:<uuid>`, `request_logged:<id>`). */
const MAX_EVENT_ID = 512;

/** Why `id` cannot be an audit event id (empty, too long, not storable as text), or null. */
export const eventIdProblem = (id: string): string | null =>
  id.length === 0
    ? 'is empty'
    : id.length > MAX_EVENT_ID
      ? `is longer than ${MAX_EVENT_ID}`
      : unstorableText(id);

export interface AuditConsumerOptions {
  bus: Bus;
  pool: Pool;
  consumerName?: string;
  ackWaitMs?: number;
  maxDeliveries?: number;
  /** A batch is stored once it holds this many events, or flushIntervalMs after its first. */
  flushEvents?: number;
  flushIntervalMs?: number;
  onError?: (err: unknown, context: string) => void;
  onStored?: (stats: AppendResult) => void;
}

export type ParsedAuditMessage = { ok: true; event: IncomingAuditEvent } | { ok: false; detail: string };

/** Not streaming, so one decoder serves every message. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Larger than any audit record this service writes (a request's is about 1 KB). */
export const MAX_EVENT_BYTES = 256 * 1024;

/**
 * The tenant comes from the subject; the event must be a JSON object of that tenant with an id, in
 * canonical JSON (what every producer sends: keys sorted, no repeated key, no whitespace, nesting
 * within MAX_STORABLE_DEPTH), so its bytes mean one thing to every reader. An id PostgreSQL cannot
 * store as it is (NUL, an unpaired surrogate) is refused here, not at the insert.
 */
export const parseAuditMessage = (subject: string, data: Uint8Array): ParsedAuditMessage => {
  if (!subject.startsWith(PREFIX)) return { ok: false, detail: `unexpected subject ${subject}` };
  const tenantId = subject.slice(PREFIX.length);
  if (!isOrgId(tenantId))
    return { ok: false, detail: `tenant id ${JSON.stringify(tenantId)} is not a plain identifier` };
  if (data.byteLength > MAX_EVENT_BYTES)
    return { ok: false, detail: `the event has ${data.byteLength} bytes, more than ${MAX_EVENT_BYTES}` };
  let text: string;
  let record: unknown;
  try {
    text = utf8.decode(data);
    if (nestsDeeperThan(text, MAX_STORABLE_DEPTH)) return { ok: false, detail: 'the event nests too deep' };
    record = JSON.parse(text);
  } catch {
    return { ok: false, detail: 'the event is not UTF-8 JSON' };
  }
  if (!record || typeof record !== 'object' || Array.isArray(record))
    return { ok: false, detail: 'the event is not a JSON object' };
  const { event_id: eventId, tenant_id: named } = record as { event_id?: unknown; tenant_id?: unknown };
  if (typeof eventId !== 'string') return { ok: false, detail: 'the event has no event_id string' };
  const bad = eventIdProblem(eventId);
  if (bad) return { ok: false, detail: `the event_id ${bad}` };
  if (named !== tenantId) return { ok: false, detail: 'the event names another tenant than its subject' };
  if (!isCanonicalJsonText(record, text)) return { ok: false, detail: 'the event is not canonical JSON' };
  return { ok: true, event: { tenantId, eventId, bytes: data } };
};

const isDataError = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
};

export class AuditConsumer extends BatchedConsumer<IncomingAuditEvent> {
  private readonly onError: (err: unknown, context: string) => void;
  private readonly onStored?: (stats: AppendResult) => void;
  private readonly pool: Pool;

  constructor(options: AuditConsumerOptions) {
    const onError = options.onError ?? (() => {});
    const flushEvents = options.flushEvents ?? 1_000;
    super({
      bus: options.bus,
      consumerName: options.consumerName ?? AUDIT_CONSUMER,
      filter: `${PREFIX}>`,
      consume: {
        ackWaitMs: options.ackWaitMs ?? 30_000,
        maxDeliveries: options.maxDeliveries ?? 50,
        batchSize: 256,
        // Every event of a tenant shares its subject: held back one at a time, a tenant would be
        // stored at a few events a second. The log's order is the order events arrive here.
        perSubjectOrder: false,
        maxInFlight: 4 * flushEvents,
        dlqReason: 'store_exhausted',
        onError: (err) => onError(err, 'audit consumer'),
      },
      flushWeight: flushEvents,
      flushIntervalMs: options.flushIntervalMs ?? 50,
      // One store at a time: arrival order is the order batches commit in.
      sequential: true,
      onError,
    });
    this.pool = options.pool;
    this.onError = onError;
    this.onStored = options.onStored;
  }

  protected async accept(m: BusMessage): Promise<{ item: IncomingAuditEvent; weight: number } | null> {
    const parsed = parseAuditMessage(m.subject, m.data);
    if (parsed.ok) return { item: parsed.event, weight: 1 };
    this.onError(new Error(parsed.detail), `invalid_event: ${m.subject}`);
    await m.deadLetter('invalid_event');
    return null;
  }

  protected async write(batch: Held<IncomingAuditEvent>[]): Promise<void> {
    let stats: AppendResult;
    try {
      stats = await appendAuditEvents(
        this.pool,
        batch.map((b) => b.item),
      );
    } catch (err) {
      // PostgreSQL refused the data itself (class 22 data exception, 23 integrity): one event must not
      // hold back the others, so each is stored alone, and one refused alone is dead-lettered.
      if (isDataError(err)) {
        if (batch.length > 1) {
          for (const one of batch) await this.write([one]);
          return;
        }
        this.onError(err, `invalid_event: ${batch[0]!.message.subject}`);
        await batch[0]!.message.deadLetter('invalid_event');
        return;
      }
      this.lastError = err;
      this.onError(err, 'store audit events; left for redelivery');
      await Promise.allSettled(batch.map((b) => b.message.nak(1_000)));
      return;
    }
    this.lastError = null;
    await Promise.allSettled(batch.map((b) => b.message.ack()));
    this.onStored?.(stats);
  }
}
