import { AnalyticsError, assertParamNames, type QueryParams } from './port.js';

/**
 * Query parameters in the text form a ClickHouse server receives as `param_<name>` over HTTP
 * (the form `@clickhouse/client` produces). The engine parses that text as the placeholder's
 * declared type, so a value can never become SQL. Formatting chdb's parameters the same way keeps
 * both adapters binding a Date, a boolean or an array identically; chdb's own binder differs
 * (a Date loses its milliseconds there).
 */
export const formatQueryParams = (params: QueryParams): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(assertParamNames(params))) out[name] = formatValue(value, false);
  return out;
};

const ESCAPES: Record<string, string> = {
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
  "'": "\\'",
  '\\': '\\\\',
};

const escapeText = (s: string): string => s.replace(/[\t\n\r'\\]/g, (c) => ESCAPES[c] ?? c);

/** `nested`: inside an array, tuple or map, where strings are quoted and null is the keyword. */
const formatValue = (value: unknown, nested: boolean): string => {
  if (value === null || value === undefined) return nested ? 'NULL' : '\\N';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (value === Number.POSITIVE_INFINITY) return '+inf';
    if (value === Number.NEGATIVE_INFINITY) return '-inf';
    return String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') {
    if (nested) return value ? 'TRUE' : 'FALSE';
    return value ? '1' : '0';
  }
  if (typeof value === 'string') return nested ? `'${escapeText(value)}'` : escapeText(value);
  if (value instanceof Date) {
    // A Unix timestamp is zone-agnostic: the server reads it the same whatever its time zone.
    const ms = value.getTime();
    if (Number.isNaN(ms)) throw new AnalyticsError('invalid', 'query parameter is an invalid Date');
    const seconds = Math.floor(ms / 1000)
      .toString()
      .padStart(10, '0');
    const millis = value.getUTCMilliseconds();
    return millis === 0 ? seconds : `${seconds}.${millis.toString().padStart(3, '0')}`;
  }
  if (Array.isArray(value)) return `[${value.map((v) => formatValue(v, true)).join(',')}]`;
  if (value instanceof Map) return formatEntries(value.entries());
  if (typeof value === 'object') return formatEntries(Object.entries(value));
  throw new AnalyticsError('invalid', `query parameter of type ${typeof value} cannot be bound`);
};

const formatEntries = (entries: Iterable<[unknown, unknown]>): string => {
  const parts: string[] = [];
  for (const [k, v] of entries) parts.push(`${formatValue(k, true)}:${formatValue(v, true)}`);
  return `{${parts.join(',')}}`;
};
