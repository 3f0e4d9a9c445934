import { createHash } from 'node:crypto';
import type { TraceRecord } from '../../traces/model.js';
import { subjects } from '../subjects.js';

/**
 * The trace message (SPEC 6 `svc.traces.<org_id>.<trace_id>.<event_id>`): the records one producer
 * wrote for one trace at one time (an OTLP export's spans of that trace, with their events and
 * artifact refs), as JSON. One message per trace and export rather than per record keeps the bus
 * at a few messages per export at tens of thousands of spans a second; the subject's last token is
 * the message's own stable id, which is also its bus message id, so an export sent twice stores
 * one message. A trace with more records than fit one message is cut into several.
 */

export const TRACE_MESSAGE_SCHEMA_VERSION = 1;

/** Below the 1 MB a NATS server accepts by default, with room for headers. */
export const TRACE_MESSAGE_MAX_BYTES = 768 * 1024;

export interface TraceMessage {
  schema_version: number;
  org_id: string;
  project_id: string;
  trace_id: string;
  records: TraceRecord[];
}

export interface OutgoingTraceMessage {
  subject: string;
  messageId: string;
  data: string;
}

const recordIdentity = (r: TraceRecord): string =>
  r.record === 'span' ? `s:${r.span_id}` : r.record === 'event' ? `e:${r.event_id}` : `a:${r.artifact_id}`;

/**
 * The messages for one trace's records: each within TRACE_MESSAGE_MAX_BYTES of UTF-8 (a record
 * alone always fits: the normalizer bounds every attributes_json well below it).
 */
export const traceMessages = (
  orgId: string,
  projectId: string,
  traceId: string,
  records: readonly TraceRecord[],
): OutgoingTraceMessage[] => {
  const out: OutgoingTraceMessage[] = [];
  const head = `{"schema_version":${TRACE_MESSAGE_SCHEMA_VERSION},"org_id":${JSON.stringify(orgId)},"project_id":${JSON.stringify(projectId)},"trace_id":${JSON.stringify(traceId)},"records":[`;
  let parts: string[] = [];
  let size = head.length + 2;
  const hash = () => createHash('sha256');
  let digest = hash();
  const emit = () => {
    if (parts.length === 0) return;
    const id = digest.digest('hex').slice(0, 32);
    out.push({
      subject: subjects.trace(orgId, traceId, id),
      messageId: `trace:${id}`,
      data: `${head}${parts.join(',')}]}`,
    });
    parts = [];
    size = head.length + 2;
    digest = hash();
  };
  for (const r of records) {
    const text = JSON.stringify(r);
    // Bytes, as the bus counts them: a character may take up to three.
    const bytes = Buffer.byteLength(text);
    if (parts.length > 0 && size + bytes + 1 > TRACE_MESSAGE_MAX_BYTES) emit();
    parts.push(text);
    size += bytes + 1;
    // The id covers what the record says, so a span exported pending and again ended is two messages.
    digest
      .update(orgId)
      .update('\u0000')
      .update(recordIdentity(r))
      .update('\u0000')
      .update(text)
      .update('\u0001');
  }
  emit();
  return out;
};

export type TraceMessageDecode = { ok: true; message: TraceMessage } | { ok: false; detail: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses a trace message and checks its tenancy: every record must name the message's org and
 * project and trace (the subject's org is checked by the caller). The records' own fields were
 * written by a trusted producer; the projector's insert refuses a record of the wrong shape.
 */
export const decodeTraceMessage = (data: Uint8Array): TraceMessageDecode => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch {
    return { ok: false, detail: 'not JSON' };
  }
  if (!isObject(parsed)) return { ok: false, detail: 'not an object' };
  const { schema_version, org_id, project_id, trace_id, records } = parsed;
  if (schema_version !== TRACE_MESSAGE_SCHEMA_VERSION)
    return { ok: false, detail: `schema_version ${String(schema_version)}` };
  if (typeof org_id !== 'string' || typeof project_id !== 'string' || typeof trace_id !== 'string')
    return { ok: false, detail: 'org_id, project_id and trace_id must be strings' };
  if (!Array.isArray(records)) return { ok: false, detail: 'records must be an array' };
  for (const r of records) {
    if (!isObject(r) || (r.record !== 'span' && r.record !== 'event' && r.record !== 'artifact'))
      return { ok: false, detail: 'a record of unknown kind' };
    if (r.org_id !== org_id || r.project_id !== project_id || r.trace_id !== trace_id)
      return { ok: false, detail: 'a record names another tenant or trace than its message' };
  }
  return { ok: true, message: parsed as unknown as TraceMessage };
};
