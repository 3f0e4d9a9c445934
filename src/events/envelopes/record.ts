import { subjects } from '../subjects.js';
import { type BodyTarget, buildBodyRef, type OutboundMessage } from './body.js';
import {
  REQUEST_COMPLETED_SCHEMA_VERSION,
  type RequestBodies,
  type RequestCompleted,
} from './request-completed.js';
import type { SpoolRecord } from './spool.js';

/** What the gateway fills in; the version and the body references are the publisher's to add. */
export type RequestCompletedDraft = Omit<RequestCompleted, 'schema_version' | 'bodies'>;

/** Raw bytes of the exchange as the caller sent and received them; a string means its UTF-8 bytes. */
export interface RecordBodies {
  request?: Uint8Array | string;
  response?: Uint8Array | string;
}

export interface BuiltRequestRecord {
  envelope: RequestCompleted;
  /** Body chunks first, the envelope last: a consumer that sees the envelope can find every chunk. */
  record: SpoolRecord;
  /** Approximate memory the record holds while queued. */
  bytes: number;
}

/**
 * The envelope and every message it travels with. Bodies are attached only under full tracing
 * (SPEC 1.10): the data-class rule is enforced here, once, rather than trusted to each caller.
 */
export const buildRequestRecord = (
  draft: RequestCompletedDraft,
  bodies: RecordBodies = {},
): BuiltRequestRecord => {
  const messages: OutboundMessage[] = [];
  const refs: RequestBodies = {};
  if (draft.trace.full_tracing) {
    const target = (side: BodyTarget['side']): BodyTarget => ({
      orgId: draft.org_id,
      requestId: draft.request_id,
      side,
    });
    if (bodies.request !== undefined) {
      const built = buildBodyRef(bodies.request, target('req'));
      refs.request = built.ref;
      messages.push(...built.chunks);
    }
    if (bodies.response !== undefined) {
      const built = buildBodyRef(bodies.response, target('res'));
      refs.response = built.ref;
      messages.push(...built.chunks);
    }
  }
  // The version first, then the draft: a literal that opens with a spread and adds fields after it
  // takes V8's slow path (about 10 µs for this one on this machine, once per request).
  const envelope: RequestCompleted = {
    schema_version: REQUEST_COMPLETED_SCHEMA_VERSION,
    ...draft,
    bodies: refs.request || refs.response ? refs : undefined,
  };
  // Plain JSON.stringify, not canonicalJson: this runs once per request on the gateway's event loop
  // and is about 6x cheaper. Duplicates are told apart by message id, never by bytes, and ingest
  // canonicalizes whatever it hashes for audit.
  const data = JSON.stringify(envelope);
  messages.push({
    subject: subjects.request(draft.org_id, draft.request_id),
    messageId: draft.request_id,
    data,
  });
  const bytes = messages.reduce(
    (n, m) => n + (typeof m.data === 'string' ? m.data.length : m.data.byteLength),
    0,
  );
  return { envelope, record: { requestId: draft.request_id, messages }, bytes };
};
