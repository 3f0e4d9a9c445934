import { randomBytes } from 'node:crypto';

/**
 * The trace a gateway request belongs to (SPEC 4.3, 6: the gateway as a trace producer): the
 * caller's W3C `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header) names the
 * trace and the caller's span, which becomes the parent of the gateway's LLM span; without one, a
 * request of a session starts a trace of its own. Neither: the request belongs to no trace.
 */
export interface TraceContext {
  traceId: string;
  /** The gateway's own span, new for every request. */
  spanId: string;
  /** The caller's span; '' when the trace begins at the gateway. */
  parentSpanId: string;
}

// version-traceid-parentid-flags; version ff is invalid, and a future version may append fields.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The trace id and parent span of a valid traceparent header, else null (then it is ignored). */
export const parseTraceparent = (header: unknown): { traceId: string; parentSpanId: string } | null => {
  if (typeof header !== 'string' || header.length > 512) return null;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return null;
  const [, version, traceId, parentSpanId, , rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return null;
  return { traceId: traceId!, parentSpanId: parentSpanId! };
};

const newSpanId = (): string => {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (id !== ZERO_SPAN) return id;
  }
};

export const traceContextOf = (traceparent: unknown, sessionId: string | null): TraceContext | null => {
  const parent = parseTraceparent(traceparent);
  if (parent) return { ...parent, spanId: newSpanId() };
  if (sessionId === null) return null;
  return { traceId: randomBytes(16).toString('hex'), spanId: newSpanId(), parentSpanId: '' };
};
