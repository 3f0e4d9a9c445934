/**
 * OTLP export -> trace records (SPEC 2.1-2.3, 4.3). The authenticated project decides org_id and
 * project_id; tenant attributes in a span or its resource are hints that must agree, and a span
 * whose hints name another tenant is refused, never stored. Payload attributes (prompts,
 * completions, tool arguments and results, documents, media, raw provider bodies) never stay in
 * attributes_json or event attributes: each becomes a TraceArtifactRecord, with its bytes handed
 * back for storage only under full capture (SPEC 1.10). Pure: no I/O, no clock.
 */
import { hash } from 'node:crypto';
import { blake3Hex } from '../lib/blake3.js';
import {
  type ArtifactKind,
  type ArtifactPayload,
  type Attributes,
  type AttributeValue,
  OPENINFERENCE_KINDS,
  type OpenInferenceKind,
  type OtlpExport,
  type OtlpSpan,
  type OtlpSpanEvent,
  type SpanKind,
  type SpanStatus,
  type TraceArtifactRecord,
  type TraceEventRecord,
  type TraceRecord,
  type TraceSource,
  type TraceSpanRecord,
} from './model.js';
import {
  classifyKey,
  MESSAGE_EVENT_METADATA,
  messageClass,
  messageEventKind,
  nestedPayloadClass,
  type PayloadClass,
} from './payload-keys.js';

export interface NormalizeInput {
  export: OtlpExport;
  orgId: string;
  projectId: string;
  capture: boolean;
  source: TraceSource;
}

export interface NormalizedExport {
  /** Per trace id, in first-seen order: the records of that trace (spans, events, artifacts). */
  traces: Map<string, TraceRecord[]>;
  /** Bytes to store (full capture only), object_key relative to the org. */
  payloads: ArtifactPayload[];
  acceptedSpans: number;
  rejectedSpans: number;
  /** Distinct reasons, for OTLP partial_success.error_message (short, human, no payload values). */
  rejections: string[];
}

/** Longer string values are cut in attributes_json; the cut keys are listed under svc.truncated. */
export const MAX_ATTRIBUTE_CHARS = 8192;
/** Deeper values are cut (recursive walkers and JSON.stringify must not overflow the stack). */
const MAX_VALUE_DEPTH = 64;
/** Nodes walked per value: a value that shares sub-values could otherwise expand exponentially. */
const MAX_VALUE_NODES = 1_000_000;
/** OTLP times are fixed64 nanoseconds. */
// DateTime64(9) holds instants up to 2^63 - 1 ns after the epoch (2262-04-11): a later one could not be stored.
const MAX_TIME = 1n << 63n;
const NS_PER_S = 1_000_000_000n;

// --- Values ---------------------------------------------------------------------------------

interface Walk {
  maxChars: number;
  nodes: number;
  cut: boolean;
}

const cutString = (s: string, max: number): string => {
  // Never leave half a surrogate pair at the end.
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
};

/** A text field of a record, held to the attribute limit. */
const capped = (s: unknown): string =>
  typeof s !== 'string' ? '' : s.length > MAX_ATTRIBUTE_CHARS ? cutString(s, MAX_ATTRIBUTE_CHARS) : s;

/**
 * `v` made safe to serialize: strings longer than `w.maxChars` cut, values past MAX_VALUE_DEPTH or
 * the node budget replaced by null (w.cut says whether anything was), types JSON cannot carry
 * mapped. Returns `v` itself when nothing changed.
 */
const clean = (v: unknown, depth: number, w: Walk): AttributeValue => {
  switch (typeof v) {
    case 'string':
      if (v.length <= w.maxChars) return v;
      w.cut = true;
      return cutString(v, w.maxChars);
    case 'number':
    case 'boolean':
      return v;
    case 'bigint':
      return v.toString();
    case 'object': {
      if (v === null) return null;
      if (depth >= MAX_VALUE_DEPTH || ++w.nodes > MAX_VALUE_NODES) {
        w.cut = true;
        return null;
      }
      if (Array.isArray(v)) {
        let copy: AttributeValue[] | undefined;
        for (let i = 0; i < v.length; i++) {
          const item: unknown = v[i];
          const c = clean(item, depth + 1, w);
          if (copy === undefined && c !== item) copy = v.slice(0, i) as AttributeValue[];
          copy?.push(c);
        }
        return copy ?? (v as AttributeValue[]);
      }
      const o = v as Record<string, unknown>;
      const out: Record<string, AttributeValue> = Object.create(null);
      for (const k of Object.keys(o)) out[k] = clean(o[k], depth + 1, w);
      return out;
    }
    default:
      return null;
  }
};

/** JSON text of a payload value, whatever its depth or shape; its strings are kept whole. */
const json = (v: unknown): string =>
  JSON.stringify(clean(v, 0, { maxChars: Number.POSITIVE_INFINITY, nodes: 0, cut: false })) ?? 'null';

/** The payload attributes of one artifact, in the order they came. */
interface Group {
  cls: PayloadClass;
  keys: string[];
  values: AttributeValue[];
}

/** An attribute map split into what may be shown (cleaned, and which keys were cut) and the payload groups. */
interface Filtered {
  kept: Record<string, AttributeValue>;
  truncated: string[];
  groups: Map<string, Group> | undefined;
}

const filterAttributes = (attrs: Attributes, messageKind: ArtifactKind | undefined): Filtered => {
  const kept: Record<string, AttributeValue> = Object.create(null);
  const truncated: string[] = [];
  let groups: Map<string, Group> | undefined;
  const w: Walk = { maxChars: MAX_ATTRIBUTE_CHARS, nodes: 0, cut: false };
  for (const key of Object.keys(attrs)) {
    const value = attrs[key] as AttributeValue;
    let c = classifyKey(key);
    // In a message event the message's own side decides, but tool arguments and media keep theirs.
    if (
      messageKind !== undefined &&
      !MESSAGE_EVENT_METADATA.has(key) &&
      (c === null || c.kind === 'input' || c.kind === 'output')
    )
      c = messageClass(messageKind, key);
    if (c === null && typeof value === 'object' && value !== null) c = nestedPayloadClass(key, value);
    if (c !== null) {
      groups ??= new Map();
      const id = `${c.kind}\u0000${c.base}`;
      const g = groups.get(id);
      if (g === undefined) groups.set(id, { cls: c, keys: [key], values: [value] });
      else {
        g.keys.push(key);
        g.values.push(value);
      }
      continue;
    }
    const t = typeof value;
    if (
      (t === 'string' && (value as string).length <= MAX_ATTRIBUTE_CHARS) ||
      t === 'number' ||
      t === 'boolean'
    ) {
      kept[key] = value;
      continue;
    }
    w.cut = false;
    w.nodes = 0;
    kept[key] = clean(value, 0, w);
    if (w.cut) truncated.push(key);
  }
  return { kept, truncated, groups };
};

const attributesJson = (f: Filtered, resource?: ResourceView): string => {
  const { kept, truncated } = f;
  if (resource !== undefined)
    for (const [key, value, cut] of resource.entries)
      if (!(key in kept)) {
        kept[key] = value;
        if (cut) truncated.push(key);
      }
  if (truncated.length > 0) kept['svc.truncated'] = truncated;
  const text = JSON.stringify(kept);
  if (text.length <= MAX_ATTRIBUTES_JSON_CHARS) return text;
  // Over the bound (a span of hundreds of long attributes): attributes in order while they fit,
  // the rest counted, so one record always fits a bus message.
  const fitted: Record<string, AttributeValue> = Object.create(null);
  let size = 2;
  let dropped = 0;
  for (const key of Object.keys(kept)) {
    const entry = JSON.stringify(key).length + JSON.stringify(kept[key]).length + 2;
    if (size + entry > MAX_ATTRIBUTES_JSON_CHARS - 64) dropped++;
    else {
      fitted[key] = kept[key] as AttributeValue;
      size += entry;
    }
  }
  fitted['svc.dropped_attributes'] = dropped;
  return JSON.stringify(fitted);
};

/**
 * Characters of one record's attributes_json at most: with UTF-8 at up to three bytes a character
 * (a surrogate pair is two characters for four bytes), a record stays within a bus message
 * (TRACE_MESSAGE_MAX_BYTES, 768 KiB) whatever its script.
 */
const MAX_ATTRIBUTES_JSON_CHARS = 64 * 1024;

// --- Small readers --------------------------------------------------------------------------

const str = (attrs: Attributes, ...keys: string[]): string => {
  for (const k of keys) {
    const v = attrs[k];
    if (typeof v === 'string' && v !== '') return capped(v);
  }
  return '';
};

const DIGITS = /^\d{1,16}$/;
const count = (attrs: Attributes, ...keys: string[]): number | null => {
  for (const k of keys) {
    const v = attrs[k];
    const n = typeof v === 'number' ? v : typeof v === 'string' && DIGITS.test(v) ? Number(v) : Number.NaN;
    if (Number.isSafeInteger(n) && n >= 0) return n;
  }
  return null;
};

const DECIMAL = /^-?\d+(?:\.\d+)?$/;
/** A number as plain decimal digits: String(), with its exponent form (1e-7, 1e21) written out. */
const plainDecimal = (n: number): string => {
  const s = String(n);
  const e = s.indexOf('e');
  if (e < 0) return s;
  const sign = s[0] === '-' ? '-' : '';
  const mantissa = s.slice(sign.length, e);
  const dot = mantissa.indexOf('.');
  const digits = dot < 0 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const point = (dot < 0 ? mantissa.length : dot) + Number(s.slice(e + 1));
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
};
const cost = (v: AttributeValue | undefined): string => {
  if (typeof v === 'number') return Number.isFinite(v) ? plainDecimal(v) : '';
  return typeof v === 'string' && v.length <= 64 && DECIMAL.test(v) ? v : '';
};

const GEN_AI_OPERATIONS = new Map<string, OpenInferenceKind>([
  ['chat', 'LLM'],
  ['text_completion', 'LLM'],
  ['generate_content', 'LLM'],
  ['embeddings', 'EMBEDDING'],
  ['execute_tool', 'TOOL'],
  ['invoke_agent', 'AGENT'],
  ['create_agent', 'AGENT'],
]);
const OPENINFERENCE = new Set<string>(OPENINFERENCE_KINDS);
const openInferenceKind = (attrs: Attributes): OpenInferenceKind => {
  const declared = attrs['openinference.span.kind'];
  if (typeof declared === 'string') {
    const upper = declared.toUpperCase();
    if (OPENINFERENCE.has(upper)) return upper as OpenInferenceKind;
  }
  const op = attrs['gen_ai.operation.name'];
  return (typeof op === 'string' && GEN_AI_OPERATIONS.get(op)) || '';
};

const SPAN_KIND_BY_CODE: readonly SpanKind[] = [
  'internal',
  'internal',
  'server',
  'client',
  'producer',
  'consumer',
];

/** 0 invalid, 1 all zeros, 2 a valid non-zero id of `length` hex digits. */
const hexId = (s: unknown, length: number): 0 | 1 | 2 => {
  if (typeof s !== 'string' || s.length !== length) return 0;
  let nonZero = false;
  for (let i = 0; i < length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x30) continue;
    if ((c > 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)) nonZero = true;
    else return 0;
  }
  return nonZero ? 2 : 1;
};

const nanos = (t: unknown): bigint => (typeof t === 'bigint' ? t : 0n);

// The spans of one export mostly share their second: its text is kept for the next timestamp. A memo,
// not state: the output never depends on it.
let lastSecond = -1n;
let lastSecondText = '';

/** RFC 3339 UTC with exactly nine fractional digits, from nanoseconds in (0, 2^64). */
export const formatNanos = (ns: bigint): string => {
  const second = ns / NS_PER_S;
  if (second !== lastSecond) {
    lastSecondText = new Date(Number(second) * 1000).toISOString().slice(0, 19);
    lastSecond = second;
  }
  return `${lastSecondText}.${(ns % NS_PER_S).toString().padStart(9, '0')}Z`;
};

const stableId = (parts: readonly (string | number)[]): string =>
  hash('sha256', JSON.stringify(parts), 'hex').slice(0, 32);

// --- Tenancy --------------------------------------------------------------------------------

const hintDiffers = (v: AttributeValue | undefined, expected: string): boolean => {
  if (v === undefined || v === null || v === '') return false;
  if (typeof v === 'string') return v !== expected;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v) !== expected;
  return true;
};

const tenantMismatch = (
  attrs: Attributes,
  orgId: string,
  projectId: string,
  where: string,
): string | null => {
  if (hintDiffers(attrs['svc.org_id'], orgId) || hintDiffers(attrs['org_id'], orgId))
    return `${where} names another organization`;
  if (hintDiffers(attrs['svc.project_id'], projectId) || hintDiffers(attrs['project_id'], projectId))
    return `${where} names another project`;
  return null;
};

const invalidSpan = (span: OtlpSpan): string | null => {
  if (hexId(span.traceId, 32) !== 2) return 'span has an invalid trace_id (not 32 hex digits, or all zeros)';
  if (hexId(span.spanId, 16) !== 2) return 'span has an invalid span_id (not 16 hex digits, or all zeros)';
  if (span.parentSpanId !== '' && hexId(span.parentSpanId, 16) === 0)
    return 'span has an invalid parent_span_id (neither empty nor 16 hex digits)';
  const start = nanos(span.startTimeUnixNano);
  if (start === 0n) return 'span has no start time';
  const end = nanos(span.endTimeUnixNano);
  if (start < 0n || start >= MAX_TIME || end < 0n || end >= MAX_TIME) return 'span has a time out of range';
  return null;
};

// --- Resources ------------------------------------------------------------------------------

interface ResourceView {
  serviceName: string;
  /** `resource.`-prefixed attributes after filtering, and whether each was cut. */
  entries: [string, AttributeValue, boolean][];
}

const viewResource = (attrs: Attributes): ResourceView => {
  // Payload attributes on a resource would belong to every span of it; they are dropped, not stored.
  const f = filterAttributes(attrs, undefined);
  const cut = new Set(f.truncated);
  const entries: [string, AttributeValue, boolean][] = Object.keys(f.kept).map((k) => [
    `resource.${k}`,
    f.kept[k] as AttributeValue,
    cut.has(k),
  ]);
  return { serviceName: str(attrs, 'service.name'), entries };
};

// --- Spans ----------------------------------------------------------------------------------

interface SpanContext {
  input: NormalizeInput;
  traceId: string;
  spanId: string;
  payloads: ArtifactPayload[];
  artifacts: TraceArtifactRecord[];
}

/** The artifacts of one attribute map's payload groups; returns the first one's id, or ''. */
const emitArtifacts = (
  cx: SpanContext,
  attrs: Attributes,
  groups: Map<string, Group> | undefined,
  where: number | 'span',
): string => {
  if (groups === undefined) return '';
  const { orgId, projectId, capture } = cx.input;
  let first = '';
  for (const { cls: c, keys, values } of groups.values()) {
    const artifactId = stableId([orgId, projectId, cx.traceId, cx.spanId, c.kind, c.base, where]);
    if (first === '') first = artifactId;
    let text: string;
    let isJson = true;
    if (keys.length === 1 && keys[0] === c.base) {
      const v = values[0];
      isJson = typeof v !== 'string';
      text = isJson ? json(v) : (v as string);
    } else {
      const object: Record<string, AttributeValue> = Object.create(null);
      for (let i = 0; i < keys.length; i++) object[keys[i]!] = values[i]!;
      text = json(object);
    }
    const mimeKey = c.base.endsWith('.value') ? `${c.base.slice(0, -6)}.mime_type` : `${c.base}.mime_type`;
    const declaredMime = attrs[mimeKey];
    const mime =
      typeof declaredMime === 'string' && declaredMime !== '' && declaredMime.length <= 255
        ? declaredMime
        : isJson
          ? 'application/json'
          : 'text/plain';
    let objectKey = '';
    let digest = '';
    let byteCount: number;
    if (capture) {
      const bytes = Buffer.from(text, 'utf8');
      byteCount = bytes.length;
      digest = blake3Hex(bytes);
      // Named by project and content: another project's span of the same ids, or the same span
      // exported twice with other bytes, never overwrites what a stored ref points at.
      objectKey = `traces/${projectId}/${cx.traceId}/${cx.spanId}/${artifactId}.${digest.slice(0, 16)}`;
      cx.payloads.push({ orgId, objectKey, bytes });
    } else byteCount = Buffer.byteLength(text, 'utf8');
    cx.artifacts.push({
      record: 'artifact',
      artifact_id: artifactId,
      trace_id: cx.traceId,
      span_id: cx.spanId,
      org_id: orgId,
      project_id: projectId,
      kind: c.kind,
      object_key: objectKey,
      mime_type: mime,
      compression: 'none',
      byte_count: byteCount,
      blake3_hash: digest,
      payload_state: capture ? 'full' : 'summary_only',
      redaction_metadata_json: JSON.stringify(
        capture
          ? { attribute: c.base, keys: keys.length }
          : { attribute: c.base, keys: keys.length, reason: 'capture_disabled' },
      ),
    });
  }
  return first;
};

const firstString = (attrs: Record<string, AttributeValue>, keys: readonly string[]): string | undefined => {
  for (const k of keys) {
    const v = attrs[k];
    if (typeof v === 'string') return v;
  }
  return undefined;
};
const LEVEL_KEYS = ['level', 'log.severity', 'severity_text'] as const;
const MESSAGE_KEYS = ['message', 'exception.message', 'event'] as const;

const normalizeSpan = (
  input: NormalizeInput,
  span: OtlpSpan,
  resource: ResourceView,
  scopeName: string,
  payloads: ArtifactPayload[],
): TraceRecord[] => {
  const { orgId, projectId, capture } = input;
  const traceId = span.traceId.toLowerCase();
  const spanId = span.spanId.toLowerCase();
  const parent = span.parentSpanId.toLowerCase();
  const attrs: Attributes = span.attributes ?? {};
  const start = nanos(span.startTimeUnixNano);
  const end = nanos(span.endTimeUnixNano);
  const pending = end === 0n;
  const startedAt = formatNanos(start);
  const endedAt = pending ? startedAt : formatNanos(end);
  const durationMs = pending || end <= start ? 0 : Number(end - start) / 1e6;
  const code = span.status?.code;
  const status: SpanStatus = pending ? 'pending' : code === 1 ? 'ok' : code === 2 ? 'error' : 'unset';
  const sessionId = str(attrs, 'session.id', 'gen_ai.conversation.id', 'svc.session_id');
  const scope = { trace_id: traceId, span_id: spanId, org_id: orgId, project_id: projectId };
  const cx: SpanContext = { input, traceId, spanId, payloads, artifacts: [] };

  const own = filterAttributes(attrs, undefined);
  emitArtifacts(cx, attrs, own.groups, 'span');

  const lifecycle = (name: string, key: string, at: string, attributesJson: string): TraceEventRecord => ({
    record: 'event',
    event_id: stableId([orgId, projectId, traceId, spanId, key]),
    ...scope,
    session_id: sessionId,
    event_name: name,
    occurred_at: at,
    level: '',
    message: '',
    attributes_json: attributesJson,
    artifact_ref: '',
  });
  const events: TraceEventRecord[] = [lifecycle('trace.span.started', 'started', startedAt, '{}')];
  const spanEvents: OtlpSpanEvent[] = span.events ?? [];
  for (let i = 0; i < spanEvents.length; i++) {
    const ev = spanEvents[i]!;
    const name = capped(ev.name);
    const evAttrs: Attributes = ev.attributes ?? {};
    const t = nanos(ev.timeUnixNano);
    const f = filterAttributes(evAttrs, messageEventKind(name));
    const artifactRef = emitArtifacts(cx, evAttrs, f.groups, i);
    const level = firstString(f.kept, LEVEL_KEYS) ?? (name === 'exception' ? 'error' : '');
    events.push({
      record: 'event',
      event_id: stableId([orgId, projectId, traceId, spanId, i, name, t.toString()]),
      ...scope,
      session_id: sessionId,
      event_name: name === '' ? 'trace.event' : name,
      occurred_at: t > 0n && t < MAX_TIME ? formatNanos(t) : startedAt,
      level,
      message: firstString(f.kept, MESSAGE_KEYS) ?? '',
      attributes_json: attributesJson(f),
      artifact_ref: artifactRef,
    });
  }
  if (!pending)
    events.push(
      lifecycle('trace.span.ended', 'ended', endedAt, JSON.stringify({ status, duration_ms: durationMs })),
    );

  const record: TraceSpanRecord = {
    record: 'span',
    ...scope,
    parent_span_id: hexId(parent, 16) === 2 ? parent : '',
    session_id: sessionId,
    request_id: str(attrs, 'svc.request_id', 'request_id'),
    span_name: capped(span.name),
    span_kind: SPAN_KIND_BY_CODE[span.kind] ?? 'internal',
    openinference_span_kind: openInferenceKind(attrs),
    service_name: resource.serviceName || scopeName,
    source: input.source,
    started_at: startedAt,
    ended_at: endedAt,
    duration_ms: durationMs,
    status,
    status_message: capped(span.status?.message),
    attributes_json: attributesJson(own, resource),
    payload_state: capture && cx.artifacts.length > 0 ? 'full' : 'summary_only',
    model_name: str(attrs, 'llm.model_name', 'gen_ai.response.model', 'gen_ai.request.model'),
    provider: str(attrs, 'llm.provider', 'gen_ai.provider.name', 'gen_ai.system'),
    llm_system: str(attrs, 'llm.system', 'gen_ai.system', 'gen_ai.provider.name'),
    prompt_tokens: count(
      attrs,
      'llm.token_count.prompt',
      'gen_ai.usage.input_tokens',
      'gen_ai.usage.prompt_tokens',
    ),
    completion_tokens: count(
      attrs,
      'llm.token_count.completion',
      'gen_ai.usage.output_tokens',
      'gen_ai.usage.completion_tokens',
    ),
    cost_total: cost(attrs['llm.cost.total']),
    tool_name: str(attrs, 'tool.name', 'gen_ai.tool.name'),
    agent_name: str(attrs, 'agent.name', 'gen_ai.agent.name'),
    user_id: str(attrs, 'user.id', 'enduser.id'),
    classification: str(attrs, 'svc.classification'),
    trace_source: str(attrs, 'svc.trace_source'),
  };
  return [record, ...cx.artifacts, ...events];
};

// --- The export -----------------------------------------------------------------------------

export const normalizeExport = (input: NormalizeInput): NormalizedExport => {
  const traces = new Map<string, TraceRecord[]>();
  const payloads: ArtifactPayload[] = [];
  const rejections = new Set<string>();
  let acceptedSpans = 0;
  let rejectedSpans = 0;
  const { orgId, projectId } = input;
  for (const rs of input.export.resourceSpans ?? []) {
    const resourceAttrs: Attributes = rs.resource?.attributes ?? {};
    const resourceMismatch = tenantMismatch(resourceAttrs, orgId, projectId, 'resource');
    let resource: ResourceView | undefined;
    for (const ss of rs.scopeSpans ?? []) {
      const scopeName = capped(ss.scope?.name);
      for (const span of ss.spans ?? []) {
        const reason =
          resourceMismatch ??
          invalidSpan(span) ??
          tenantMismatch(span.attributes ?? {}, orgId, projectId, 'span');
        if (reason !== null) {
          rejectedSpans++;
          rejections.add(reason);
          continue;
        }
        resource ??= viewResource(resourceAttrs);
        const records = normalizeSpan(input, span, resource, scopeName, payloads);
        const traceId = (records[0] as TraceSpanRecord).trace_id;
        const list = traces.get(traceId);
        if (list === undefined) traces.set(traceId, records);
        else for (const r of records) list.push(r);
        acceptedSpans++;
      }
    }
  }
  return { traces, payloads, acceptedSpans, rejectedSpans, rejections: [...rejections] };
};
