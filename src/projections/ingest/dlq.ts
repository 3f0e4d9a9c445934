import { millis } from 'nats';
import { type Bus, type DeadLetterInfo, readDeadLetter } from '../../events/bus.js';
import type { NatsBus } from '../../events/nats/bus.js';
import type { Pool } from '../../events/postgres/pool.js';
import { DLQ_SUBJECT, prefixed, subjects } from '../../events/subjects.js';
import { parseRequestSubject } from './decode.js';

/**
 * Reading and replaying `svc.dlq.requests` (SPEC 6, 8). The bus port only
 * consumes, and consuming would settle what an operator only wants to see, so each adapter's
 * retained dead letters are read where they are kept: the Postgres bus table, or the JetStream
 * stream through an ordered (ephemeral, ack-less) consumer. Listing never changes them; they age
 * out after the stream's 30 days.
 */

export interface DeadLetter {
  /** Position in the dead-letter stream. */
  seq: number;
  data: Uint8Array;
  info: DeadLetterInfo;
  deadLetteredAt: Date | null;
}

export interface DeadLetterSource {
  list(): Promise<DeadLetter[]>;
}

const withInfo = (
  seq: number,
  data: Uint8Array,
  headers: Record<string, string>,
  at: Date | null,
): DeadLetter[] => {
  const info = readDeadLetter(headers);
  return info ? [{ seq, data, info, deadLetteredAt: at }] : [];
};

export const postgresDeadLetters = (pool: Pool, subjectPrefix = ''): DeadLetterSource => ({
  list: async () => {
    const { rows } = await pool.query<{
      seq: string;
      data: Buffer;
      headers: Record<string, string>;
      published_at: Date;
    }>(
      `SELECT seq, data, headers, published_at FROM svc_bus_messages
        WHERE stream = 'dlq' AND subject = $1 ORDER BY seq`,
      [prefixed(subjectPrefix, DLQ_SUBJECT)],
    );
    return rows.flatMap((r) => withInfo(Number(r.seq), new Uint8Array(r.data), r.headers, r.published_at));
  },
});

export const natsDeadLetters = (bus: NatsBus, streamNamePrefix = 'SVC_'): DeadLetterSource => ({
  list: async () => {
    const stream = `${streamNamePrefix}DLQ`;
    const nc = await bus.connection();
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(stream).catch(() => null);
    if (!info || info.state.messages === 0) return [];
    const last = info.state.last_seq;
    const consumer = await nc.jetstream().consumers.get(stream);
    const out: DeadLetter[] = [];
    let seq = 0;
    while (seq < last) {
      const batch = await consumer.fetch({ max_messages: 500, expires: 2_000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        seq = m.seq;
        const headers: Record<string, string> = {};
        for (const key of m.headers?.keys() ?? []) headers[key] = m.headers!.get(key);
        out.push(...withInfo(m.seq, m.data, headers, new Date(millis(m.info.timestampNanos))));
        if (seq >= last) break;
      }
      if (got === 0) break;
    }
    return out;
  },
});

/** The request a dead letter belongs to, from its envelope or else its original subject. */
export const requestOf = (dl: DeadLetter): { orgId: string; requestId: string } | null => {
  const chunkOrEnvelope = parseRequestSubject(dl.info.subject);
  if (chunkOrEnvelope?.chunk) return chunkOrEnvelope;
  try {
    const json = JSON.parse(new TextDecoder().decode(dl.data)) as { org_id?: unknown; request_id?: unknown };
    if (typeof json.org_id === 'string' && typeof json.request_id === 'string')
      return { orgId: json.org_id, requestId: json.request_id };
  } catch {}
  return chunkOrEnvelope;
};

/**
 * Where a replay publishes the payload (SPEC 6): an envelope to `svc.requests.<org_id>.<request_id>`
 * read from the payload; a body chunk back to its own chunk subject, which its envelope names;
 * anything undecodable to the subject it came from.
 */
export const replaySubject = (dl: DeadLetter): string => {
  const original = parseRequestSubject(dl.info.subject);
  if (original?.chunk) return dl.info.subject;
  const request = requestOf(dl);
  if (!request) return dl.info.subject;
  try {
    return subjects.request(request.orgId, request.requestId);
  } catch {
    return dl.info.subject;
  }
};

export interface ReplaySummary {
  replayed: number;
  failed: number;
  byReason: Record<string, number>;
  errors: { seq: number; error: string }[];
}

/**
 * Republishes in dead-letter order (chunks were dead-lettered before their envelope). The message id
 * is new for each run: the original id may still sit in the bus's duplicate window, and ingest is
 * idempotent by request id, so a payload replayed twice is stored once.
 */
export const replayDeadLetters = async (
  bus: Bus,
  letters: readonly DeadLetter[],
  options: { runId: string; onProgress?: (done: number, total: number) => void },
): Promise<ReplaySummary> => {
  const summary: ReplaySummary = { replayed: 0, failed: 0, byReason: {}, errors: [] };
  for (const [i, dl] of letters.entries()) {
    try {
      await bus.publish(replaySubject(dl), dl.data, {
        messageId: `${dl.info.messageId}:replay:${options.runId}`,
      });
      summary.replayed++;
      summary.byReason[dl.info.reason] = (summary.byReason[dl.info.reason] ?? 0) + 1;
    } catch (err) {
      summary.failed++;
      summary.errors.push({ seq: dl.seq, error: err instanceof Error ? err.message : String(err) });
    }
    options.onProgress?.(i + 1, letters.length);
  }
  return summary;
};
