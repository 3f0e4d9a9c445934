import { chunkSubjectPrefix } from '../../events/envelopes/body.js';
import {
  type BodyRef,
  isChunkedBody,
  type RequestCompleted,
  requestCompletedSchema,
} from '../../events/envelopes/request-completed.js';
import type { BodySide } from '../../events/subjects.js';
import { subjectToken } from '../../events/subjects.js';
import { tryParseUsd } from '../../lib/money.js';
import { assertOrgId } from '../../objects/port.js';

/**
 * What one message on `svc.requests.>` is (SPEC 6): a request.completed envelope on
 * `svc.requests.<org>.<request>`, a body chunk on `<that>.body.<req|res>.chunk.<n>`, or something
 * ingest can never store, with the dead-letter reason that says why.
 */
export type Incoming =
  | { kind: 'envelope'; envelope: RequestCompleted }
  | { kind: 'chunk'; orgId: string; requestId: string; side: BodySide; n: number }
  | { kind: 'dead'; reason: 'invalid_event' | 'malformed_row'; detail: string; requestId: string | null };

export interface RequestSubject {
  orgId: string;
  requestId: string;
  chunk: { side: BodySide; n: number } | null;
}

/** Null for a subject outside the request tree's two shapes. */
export const parseRequestSubject = (subject: string): RequestSubject | null => {
  const t = subject.split('.');
  if (t[0] !== 'svc' || t[1] !== 'requests' || !t[2] || !t[3]) return null;
  if (t.length === 4) return { orgId: t[2], requestId: t[3], chunk: null };
  const [, , , , body, side, chunk, n] = t;
  if (t.length !== 8 || body !== 'body' || chunk !== 'chunk' || !/^(0|[1-9]\d{0,8})$/.test(n ?? ''))
    return null;
  if (side !== 'req' && side !== 'res') return null;
  return { orgId: t[2], requestId: t[3], chunk: { side, n: Number(n) } };
};

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Decimal(38, 18) holds magnitudes below 10^20 USD; 10^38 atto-USD. */
const DECIMAL_LIMIT = 10n ** 38n;
const UINT16_MAX = 65_535;
const UINT32_MAX = 4_294_967_295;
// DateTime64(3) covers 1900-01-01 .. 2299-12-31.
const EARLIEST = Date.UTC(1900, 0, 1);
const LATEST = Date.UTC(2300, 0, 1);

const decimalProblem = (what: string, text: string): string | null => {
  const parsed = tryParseUsd(text);
  if (!parsed.ok) return `${what}: ${parsed.error}`;
  const v = parsed.value < 0n ? -parsed.value : parsed.value;
  return v < DECIMAL_LIMIT ? null : `${what} ${text} does not fit Decimal(38, 18)`;
};

const tokenProblem = (what: string, value: string): string | null => {
  try {
    subjectToken(what, value);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
};

const orgProblem = (orgId: string): string | null => {
  try {
    assertOrgId(orgId);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
};

const bodyProblem = (e: RequestCompleted, side: BodySide, ref: BodyRef | undefined): string | null => {
  if (!ref || !isChunkedBody(ref)) return null;
  const expected = chunkSubjectPrefix({ orgId: e.org_id, requestId: e.request_id, side });
  return ref.subject_prefix === expected
    ? null
    : `bodies.${side}: chunks on ${ref.subject_prefix}, expected ${expected}`;
};

/**
 * Rules the schema cannot state but the tables and subjects need, so a row that would fail every
 * insert (and block its whole batch) is refused as malformed instead of retried until exhausted.
 */
export const rowProblems = (e: RequestCompleted, subject: RequestSubject): string[] => {
  const problems = [
    e.org_id === subject.orgId ? null : `org_id ${e.org_id} arrived on the subject of ${subject.orgId}`,
    e.request_id === subject.requestId
      ? null
      : `request_id ${e.request_id} arrived on the subject of ${subject.requestId}`,
    tokenProblem('workspace id', e.workspace_id),
    orgProblem(e.org_id),
    decimalProblem('total_cost_usd', e.total_cost_usd),
    ...e.cost_lines.flatMap((l, i) => [
      decimalProblem(`cost_lines[${i}].unit_price`, l.unit_price),
      decimalProblem(`cost_lines[${i}].amount`, l.amount),
      l.provenance.source === 'rate_card' && l.provenance.revision > UINT32_MAX
        ? `cost_lines[${i}] revision is out of range`
        : null,
    ]),
    e.usage_lines.length > UINT16_MAX ? 'too many usage lines' : null,
    e.cost_lines.length > UINT16_MAX ? 'too many cost lines' : null,
    e.attempts.length > UINT16_MAX ? 'too many attempts' : null,
    bodyProblem(e, 'req', e.bodies?.request),
    bodyProblem(e, 'res', e.bodies?.response),
  ];
  for (const [what, at] of [
    ['started_at', e.started_at],
    ['finished_at', e.finished_at],
  ] as const) {
    const ms = Date.parse(at);
    if (!(ms >= EARLIEST && ms < LATEST)) problems.push(`${what} ${at} is outside DateTime64 range`);
  }
  return problems.filter((p): p is string => p !== null);
};

/** Undecodable bytes are an invalid event; decodable JSON that is not a storable row is malformed. */
export const classify = (subject: string, data: Uint8Array): Incoming => {
  const s = parseRequestSubject(subject);
  if (!s) return { kind: 'dead', reason: 'invalid_event', detail: `subject ${subject}`, requestId: null };
  if (s.chunk) return { kind: 'chunk', orgId: s.orgId, requestId: s.requestId, ...s.chunk };
  let json: unknown;
  try {
    json = JSON.parse(strictUtf8.decode(data));
  } catch (err) {
    return { kind: 'dead', reason: 'invalid_event', detail: (err as Error).message, requestId: s.requestId };
  }
  const parsed = requestCompletedSchema.safeParse(json);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    return { kind: 'dead', reason: 'malformed_row', detail, requestId: s.requestId };
  }
  const problems = rowProblems(parsed.data, s);
  if (problems.length > 0)
    return { kind: 'dead', reason: 'malformed_row', detail: problems.join('; '), requestId: s.requestId };
  return { kind: 'envelope', envelope: parsed.data };
};
