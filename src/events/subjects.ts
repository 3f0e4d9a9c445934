/**
 * The bus subject tree (SPEC.md section 6) and the streams that hold it. Every subject is built
 * here so that an id carrying a dot or a wildcard can never land a message on someone else's
 * subject or widen a consumer's filter.
 */

export class InvalidSubjectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSubjectError';
  }
}

// A token is one dot-separated level; NATS forbids whitespace in subjects and gives '*' and '>'
// wildcard meaning, so none of them may come from an id. Control characters are refused too.
const BAD_TOKEN = /[\s.*>]/;
const hasControl = (value: string) =>
  [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

export const subjectToken = (what: string, value: string): string => {
  if (value.length === 0 || BAD_TOKEN.test(value) || hasControl(value)) {
    throw new InvalidSubjectError(`${what} ${JSON.stringify(value)} is not a valid subject token`);
  }
  return value;
};

export type BodySide = 'req' | 'res';

/** Kept outside svc.requests.> so that replaying a dead letter is not captured again as a dead letter. */
export const DLQ_SUBJECT = 'svc.dlq.requests';

export const subjects = {
  request: (orgId: string, requestId: string) =>
    `svc.requests.${subjectToken('org id', orgId)}.${subjectToken('request id', requestId)}`,
  bodyChunk: (orgId: string, requestId: string, side: BodySide, n: number) => {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new InvalidSubjectError(`chunk number ${n} is not a natural number`);
    return `${subjects.request(orgId, requestId)}.body.${side}.chunk.${n}`;
  },
  audit: (tenantId: string) => `svc.audit.events.${subjectToken('tenant id', tenantId)}`,
  trace: (orgId: string, traceId: string, eventId: string) =>
    `svc.traces.${subjectToken('org id', orgId)}.${subjectToken('trace id', traceId)}.${subjectToken('event id', eventId)}`,
  dlq: DLQ_SUBJECT,
} as const;

export type StreamKey = 'requests' | 'audit' | 'traces' | 'dlq';

export interface StreamDefinition {
  key: StreamKey;
  /** Appended to the adapter's stream-name prefix (production: `SVC_REQUESTS`, ...). */
  name: string;
  subjects: string;
  /** Messages older than this are discarded; undefined keeps them until removed by limits. */
  maxAgeMs?: number;
}

const DAY_MS = 86_400_000;

export const STREAMS: readonly StreamDefinition[] = [
  { key: 'requests', name: 'REQUESTS', subjects: 'svc.requests.>' },
  { key: 'audit', name: 'AUDIT', subjects: 'svc.audit.events.>' },
  { key: 'traces', name: 'TRACES', subjects: 'svc.traces.>' },
  { key: 'dlq', name: 'DLQ', subjects: DLQ_SUBJECT, maxAgeMs: 30 * DAY_MS },
];

const tokensOf = (subject: string, allowWildcards: boolean, what: string): string[] => {
  const tokens = subject.split('.');
  tokens.forEach((t, i) => {
    const wildcard = allowWildcards && (t === '*' || (t === '>' && i === tokens.length - 1));
    if (!wildcard) subjectToken(what, t);
  });
  return tokens;
};

/** A concrete subject: dot-separated valid tokens, no wildcards. */
export const assertSubject = (subject: string): string => {
  tokensOf(subject, false, `token of subject ${JSON.stringify(subject)}:`);
  return subject;
};

/** A consumer filter: like a subject, with '*' for one token and a final '>' for one or more. */
export const assertFilter = (filter: string): string => {
  tokensOf(filter, true, `token of filter ${JSON.stringify(filter)}:`);
  return filter;
};

export const subjectMatches = (filter: string, subject: string): boolean => {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
};

/** True when every subject `filter` matches is also matched by `pattern` (a stream's subjects). */
export const filterWithin = (pattern: string, filter: string): boolean => {
  const p = pattern.split('.');
  const f = filter.split('.');
  for (let i = 0; i < p.length; i++) {
    if (i >= f.length) return false;
    if (p[i] === '>') return true;
    if (f[i] === '>') return false;
    if (p[i] !== '*' && (f[i] === '*' || f[i] !== p[i])) return false;
  }
  return p.length === f.length;
};

/** A POSIX regular expression equivalent to `subjectMatches(filter, ·)`, for SQL `~`. */
export const filterToRegex = (filter: string): string =>
  `^${assertFilter(filter)
    .split('.')
    .map((t) => (t === '*' ? '[^.]+' : t === '>' ? '.+' : t.replace(/[\\^$|?+()[\]{}]/g, '\\$&')))
    .join('\\.')}$`;

export const streamOf = (subject: string): StreamDefinition | undefined =>
  STREAMS.find((s) => subjectMatches(s.subjects, subject));

/**
 * Test runs share one NATS server, so each run places the whole tree under its own first token;
 * production uses no prefix.
 */
export const prefixed = (prefix: string, subject: string): string =>
  prefix ? `${prefix}.${subject}` : subject;

export const unprefixed = (prefix: string, subject: string): string =>
  prefix && subject.startsWith(`${prefix}.`) ? subject.slice(prefix.length + 1) : subject;
