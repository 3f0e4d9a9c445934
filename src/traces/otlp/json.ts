import { Buffer } from 'node:buffer';
import type {
  Attributes,
  AttributeValue,
  OtlpExport,
  OtlpResourceSpans,
  OtlpScopeSpans,
  OtlpSpan,
} from '../model.js';
import { MAX_DEPTH, MAX_SPANS, OtlpDecodeError, OtlpLimitError, setKey } from './common.js';

// Spans read by the running decode (synchronous, so module state is safe), against MAX_SPANS.
let spansRead = 0;

// OTLP/JSON: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding. Ids are hex (not the
// base64 of the generic proto3 mapping), enums integers or names, int64 decimal strings or numbers.

type JsonObject = Record<string, unknown>;

function bad(path: string, what: string): never {
  throw new OtlpDecodeError(`${path} ${what}`);
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

const asObject = (v: unknown, path: string): JsonObject => (isObject(v) ? v : bad(path, 'must be an object'));

/** A field by its lowerCamelCase JSON name, else its original proto name; null means absent. */
const get = (o: JsonObject, camel: string, snake?: string): unknown => {
  const v = o[camel];
  if (v !== undefined && v !== null) return v;
  const w = snake === undefined ? undefined : o[snake];
  return w === null ? undefined : w;
};

const jsonString = (o: JsonObject, path: string, camel: string, snake?: string): string => {
  const v = get(o, camel, snake);
  if (v === undefined) return '';
  return typeof v === 'string' ? v : bad(`${path}.${camel}`, 'must be a string');
};

const jsonArray = (o: JsonObject, path: string, camel: string, snake?: string): unknown[] => {
  const v = get(o, camel, snake);
  if (v === undefined) return [];
  return Array.isArray(v) ? v : bad(`${path}.${camel}`, 'must be an array');
};

const jsonObject = (o: JsonObject, path: string, camel: string): JsonObject | undefined => {
  const v = get(o, camel);
  return v === undefined ? undefined : asObject(v, `${path}.${camel}`);
};

const HEX_BYTES = /^(?:[0-9a-fA-F]{2})*$/;

const jsonId = (o: JsonObject, path: string, camel: string, snake: string): string => {
  const v = jsonString(o, path, camel, snake);
  return HEX_BYTES.test(v) ? v.toLowerCase() : bad(`${path}.${camel}`, 'must be hex-encoded bytes');
};

const SPAN_KINDS = new Map([
  ['SPAN_KIND_UNSPECIFIED', 0],
  ['SPAN_KIND_INTERNAL', 1],
  ['SPAN_KIND_SERVER', 2],
  ['SPAN_KIND_CLIENT', 3],
  ['SPAN_KIND_PRODUCER', 4],
  ['SPAN_KIND_CONSUMER', 5],
]);
const STATUS_CODES = new Map([
  ['STATUS_CODE_UNSET', 0],
  ['STATUS_CODE_OK', 1],
  ['STATUS_CODE_ERROR', 2],
]);

const jsonEnum = (o: JsonObject, path: string, camel: string, names: Map<string, number>): number => {
  const v = get(o, camel);
  if (v === undefined) return 0;
  if (typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) return v;
  const named = typeof v === 'string' ? names.get(v) : undefined;
  return named ?? bad(`${path}.${camel}`, 'must be an enum number or name');
};

/** fixed64 times; at most 20 digits keeps BigInt parsing cheap on hostile input. */
const jsonTime = (o: JsonObject, path: string, camel: string, snake: string): bigint => {
  const v = get(o, camel, snake);
  if (v === undefined) return 0n;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 64) return BigInt(v);
  if (typeof v === 'string' && /^\d{1,20}$/.test(v)) {
    const n = BigInt(v);
    if (n < 2n ** 64n) return n;
  }
  return bad(`${path}.${camel}`, 'must be an unsigned 64-bit integer');
};

const jsonInt64 = (v: unknown, path: string): number | string => {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return v === 0 ? 0 : v; // no -0
    // Already rounded by JSON.parse; kept as the integer it now is.
    if (Number.isInteger(v) && v >= -(2 ** 63) && v < 2 ** 63) return BigInt(v).toString();
  } else if (typeof v === 'string' && /^-?\d{1,19}$/.test(v)) {
    const n = BigInt(v);
    if (n >= -(2n ** 63n) && n < 2n ** 63n) {
      const small = Number(n);
      return Number.isSafeInteger(small) ? small : n.toString();
    }
  }
  return bad(path, 'must be a signed 64-bit integer');
};

const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

const jsonDouble = (v: unknown, path: string): number => {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    // The proto3 JSON mapping spells the non-finite doubles as strings.
    if (v === 'NaN') return Number.NaN;
    if (v === 'Infinity') return Number.POSITIVE_INFINITY;
    if (v === '-Infinity') return Number.NEGATIVE_INFINITY;
    if (DECIMAL.test(v)) return Number(v);
  }
  return bad(path, 'must be a number');
};

// Standard or URL-safe alphabet, padding optional (proto3 JSON accepts both).
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Re-encoded as standard padded base64 so both encodings of a value decode to the same text. */
const jsonBytes = (v: unknown, path: string): string => {
  if (typeof v === 'string' && BASE64.test(v) && v.replace(/=+$/, '').length % 4 !== 1) {
    return Buffer.from(v, 'base64').toString('base64');
  }
  return bad(path, 'must be base64');
};

/** AnyValue: exactly one member set, or none (null). */
const jsonAnyValue = (v: unknown, path: string, depth: number): AttributeValue => {
  if (depth > MAX_DEPTH) bad(path, `nests deeper than ${MAX_DEPTH}`);
  if (v === undefined || v === null) return null;
  const o = asObject(v, path);
  let value: AttributeValue = null;
  let found = '';
  const take = (camel: string, snake: string): unknown => {
    const x = get(o, camel, snake);
    if (x === undefined) return undefined;
    if (found) bad(path, `sets both ${found} and ${camel}`);
    found = camel;
    return x;
  };
  const s = take('stringValue', 'string_value');
  if (s !== undefined) value = typeof s === 'string' ? s : bad(`${path}.stringValue`, 'must be a string');
  const b = take('boolValue', 'bool_value');
  if (b !== undefined) value = typeof b === 'boolean' ? b : bad(`${path}.boolValue`, 'must be a boolean');
  const i = take('intValue', 'int_value');
  if (i !== undefined) value = jsonInt64(i, `${path}.intValue`);
  const d = take('doubleValue', 'double_value');
  if (d !== undefined) value = jsonDouble(d, `${path}.doubleValue`);
  const a = take('arrayValue', 'array_value');
  if (a !== undefined) {
    const at = `${path}.arrayValue`;
    value = jsonArray(asObject(a, at), at, 'values').map((x, n) =>
      jsonAnyValue(x, `${at}.values[${n}]`, depth + 2),
    );
  }
  const kv = take('kvlistValue', 'kvlist_value');
  if (kv !== undefined) {
    const at = `${path}.kvlistValue`;
    value = jsonAttributes(asObject(kv, at), at, 'values', undefined, depth + 2);
  }
  const bytes = take('bytesValue', 'bytes_value');
  if (bytes !== undefined) value = jsonBytes(bytes, `${path}.bytesValue`);
  return value;
};

/** A `repeated KeyValue` field as an object; the last duplicate key wins. */
const jsonAttributes = (
  o: JsonObject,
  path: string,
  camel: string,
  snake: string | undefined,
  depth: number,
): Attributes => {
  const out: Attributes = {};
  const list = jsonArray(o, path, camel, snake);
  for (let n = 0; n < list.length; n++) {
    const at = `${path}.${camel}[${n}]`;
    const kv = asObject(list[n], at);
    setKey(out, jsonString(kv, at, 'key'), jsonAnyValue(get(kv, 'value'), `${at}.value`, depth + 1));
  }
  return out;
};

const jsonSpan = (v: unknown, path: string): OtlpSpan => {
  const o = asObject(v, path);
  const status = jsonObject(o, path, 'status');
  return {
    traceId: jsonId(o, path, 'traceId', 'trace_id'),
    spanId: jsonId(o, path, 'spanId', 'span_id'),
    parentSpanId: jsonId(o, path, 'parentSpanId', 'parent_span_id'),
    traceState: jsonString(o, path, 'traceState', 'trace_state'),
    name: jsonString(o, path, 'name'),
    kind: jsonEnum(o, path, 'kind', SPAN_KINDS),
    startTimeUnixNano: jsonTime(o, path, 'startTimeUnixNano', 'start_time_unix_nano'),
    endTimeUnixNano: jsonTime(o, path, 'endTimeUnixNano', 'end_time_unix_nano'),
    attributes: jsonAttributes(o, path, 'attributes', undefined, 4),
    events: jsonArray(o, path, 'events').map((x, n) => {
      const at = `${path}.events[${n}]`;
      const e = asObject(x, at);
      return {
        timeUnixNano: jsonTime(e, at, 'timeUnixNano', 'time_unix_nano'),
        name: jsonString(e, at, 'name'),
        attributes: jsonAttributes(e, at, 'attributes', undefined, 5),
      };
    }),
    links: jsonArray(o, path, 'links').map((x, n) => {
      const at = `${path}.links[${n}]`;
      const l = asObject(x, at);
      return {
        traceId: jsonId(l, at, 'traceId', 'trace_id'),
        spanId: jsonId(l, at, 'spanId', 'span_id'),
        attributes: jsonAttributes(l, at, 'attributes', undefined, 5),
      };
    }),
    status: {
      code: status ? jsonEnum(status, `${path}.status`, 'code', STATUS_CODES) : 0,
      message: status ? jsonString(status, `${path}.status`, 'message') : '',
    },
  };
};

const jsonScopeSpans = (v: unknown, path: string): OtlpScopeSpans => {
  const o = asObject(v, path);
  const scope = jsonObject(o, path, 'scope') ?? {};
  const at = `${path}.scope`;
  return {
    scope: {
      name: jsonString(scope, at, 'name'),
      version: jsonString(scope, at, 'version'),
      attributes: jsonAttributes(scope, at, 'attributes', undefined, 3),
    },
    spans: jsonArray(o, path, 'spans').map((x, n) => {
      if (++spansRead > MAX_SPANS) throw new OtlpLimitError(`more than ${MAX_SPANS} spans in one export`);
      return jsonSpan(x, `${path}.spans[${n}]`);
    }),
  };
};

const jsonResourceSpans = (v: unknown, path: string): OtlpResourceSpans => {
  const o = asObject(v, path);
  const resource = jsonObject(o, path, 'resource') ?? {};
  return {
    resource: { attributes: jsonAttributes(resource, `${path}.resource`, 'attributes', undefined, 2) },
    scopeSpans: jsonArray(o, path, 'scopeSpans', 'scope_spans').map((x, n) =>
      jsonScopeSpans(x, `${path}.scopeSpans[${n}]`),
    ),
  };
};

/** Decodes an OTLP/JSON ExportTraceServiceRequest. Throws OtlpDecodeError naming the offending path. */
export const decodeOtlpJson = (text: string): OtlpExport => {
  spansRead = 0;
  let root: unknown;
  try {
    // A UTF-8 byte order mark is not JSON, but some clients send one.
    root = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    throw new OtlpDecodeError(`invalid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const o = asObject(root, '$');
  return {
    resourceSpans: jsonArray(o, '$', 'resourceSpans', 'resource_spans').map((x, n) =>
      jsonResourceSpans(x, `$.resourceSpans[${n}]`),
    ),
  };
};
