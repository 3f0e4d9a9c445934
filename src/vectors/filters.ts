import { assertNever } from '../lib/assert.js';
import { isPlainObject } from '../lib/fields.js';
import { invalid, type Validated, valid } from '../lib/validated.js';

/**
 * File attributes and the search filters over them, in OpenAI's shapes (SPEC 4.1
 * /v1/vector_stores/{id}/search):
 *   attributes  at most 16 pairs; keys up to 64 characters; values a string (up to 512
 *               characters), a finite number or a boolean.
 *   filters     `{type: eq|ne|gt|gte|lt|lte, key, value}`, `{type: in|nin, key, value: [...]}` or
 *               `{type: and|or, filters: [...]}`, nested.
 *
 * Comparisons are typed: a number matches numeric attributes only, a string string attributes,
 * a boolean boolean ones (eq/ne). `gt`..`lte` order numbers numerically and strings by their bytes
 * (ISO-8601 dates sort right). `ne` and `nin` also match a file that lacks the key, as "not equal"
 * reads. Filters compile to SQL whose every key and value is a bound query parameter.
 */

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

export const MAX_ATTRIBUTES = 16;
export const MAX_ATTRIBUTE_KEY_LENGTH = 64;
export const MAX_ATTRIBUTE_STRING_LENGTH = 512;

export const parseAttributes = (value: unknown, field = 'attributes'): Validated<Attributes> => {
  if (value === undefined || value === null) return valid({});
  if (!isPlainObject(value)) return invalid(field, 'must be an object of key/value pairs');
  const entries = Object.entries(value);
  if (entries.length > MAX_ATTRIBUTES) {
    return invalid(field, `may hold at most ${MAX_ATTRIBUTES} pairs, got ${entries.length}`);
  }
  for (const [key, v] of entries) {
    if (key.length === 0 || key.length > MAX_ATTRIBUTE_KEY_LENGTH) {
      return invalid(field, `keys must be 1 to ${MAX_ATTRIBUTE_KEY_LENGTH} characters long`);
    }
    const at = `${field}.${key}`;
    if (typeof v === 'string') {
      if (v.length > MAX_ATTRIBUTE_STRING_LENGTH) {
        return invalid(at, `must be at most ${MAX_ATTRIBUTE_STRING_LENGTH} characters long`);
      }
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return invalid(at, 'must be a finite number');
    } else if (typeof v !== 'boolean') {
      return invalid(at, 'must be a string, a number or a boolean');
    }
  }
  return valid(value as Attributes);
};

/** The same attributes split by value type, as the `attr_*` map columns hold them. */
export const attributeColumns = (attributes: Attributes) => {
  const attr_string: Record<string, string> = {};
  const attr_number: Record<string, number> = {};
  const attr_bool: Record<string, boolean> = {};
  for (const [key, v] of Object.entries(attributes)) {
    if (typeof v === 'string') attr_string[key] = v;
    else if (typeof v === 'number') attr_number[key] = v;
    else attr_bool[key] = v;
  }
  return { attr_string, attr_number, attr_bool };
};

export type ComparisonType = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
export type ListType = 'in' | 'nin';

export type Filter =
  | { type: ComparisonType; key: string; value: AttributeValue }
  | { type: ListType; key: string; value: (string | number)[] }
  | { type: 'and' | 'or'; filters: Filter[] };

const COMPARISONS: readonly string[] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'];
const LISTS: readonly string[] = ['in', 'nin'];
const MAX_DEPTH = 8;
const MAX_NODES = 100;
const MAX_LIST_VALUES = 1_000;

/** `filters` of a search request (and of file_search), or what is wrong with it. */
export const parseFilter = (value: unknown, field = 'filters'): Validated<Filter> => {
  const state = { nodes: 0 };
  return parseNode(value, field, 1, state);
};

const parseNode = (
  value: unknown,
  field: string,
  depth: number,
  state: { nodes: number },
): Validated<Filter> => {
  if (!isPlainObject(value)) return invalid(field, 'must be a filter object');
  state.nodes += 1;
  if (state.nodes > MAX_NODES) return invalid(field, `may hold at most ${MAX_NODES} filters in all`);
  const type = value.type;
  if (type === 'and' || type === 'or') {
    if (depth >= MAX_DEPTH) return invalid(field, `may nest at most ${MAX_DEPTH} levels deep`);
    const list = value.filters;
    if (!Array.isArray(list) || list.length === 0) {
      return invalid(`${field}.filters`, 'must be a non-empty array of filters');
    }
    const filters: Filter[] = [];
    for (const [i, item] of list.entries()) {
      const parsed = parseNode(item, `${field}.filters[${i}]`, depth + 1, state);
      if (!parsed.ok) return parsed;
      filters.push(parsed.value);
    }
    return valid({ type, filters });
  }
  if (typeof type !== 'string' || (!COMPARISONS.includes(type) && !LISTS.includes(type))) {
    return invalid(`${field}.type`, 'must be one of eq, ne, gt, gte, lt, lte, in, nin, and, or');
  }
  const key = value.key;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_ATTRIBUTE_KEY_LENGTH) {
    return invalid(`${field}.key`, `must be a string of 1 to ${MAX_ATTRIBUTE_KEY_LENGTH} characters`);
  }
  const v = value.value;
  if (LISTS.includes(type)) {
    if (!Array.isArray(v) || v.length > MAX_LIST_VALUES) {
      return invalid(`${field}.value`, `must be an array of at most ${MAX_LIST_VALUES} strings or numbers`);
    }
    if (!v.every((x) => typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)))) {
      return invalid(`${field}.value`, 'must hold only strings and finite numbers');
    }
    return valid({ type: type as ListType, key, value: v as (string | number)[] });
  }
  if (typeof v === 'number' ? !Number.isFinite(v) : typeof v !== 'string' && typeof v !== 'boolean') {
    return invalid(`${field}.value`, 'must be a string, a finite number or a boolean');
  }
  if (typeof v === 'boolean' && type !== 'eq' && type !== 'ne') {
    return invalid(`${field}.value`, `a boolean can only be compared with eq or ne, not ${type}`);
  }
  return valid({ type: type as ComparisonType, key, value: v as AttributeValue });
};

/** Query parameters gathered while compiling; names are generated, never taken from input. */
export class SqlParams {
  readonly values: Record<string, unknown> = {};
  private next = 0;

  constructor(private readonly prefix = 'f') {}

  /** A placeholder `{name:type}` bound to `value`. */
  bind(type: string, value: unknown): string {
    const name = `${this.prefix}${this.next++}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }
}

const OPERATORS: Record<ComparisonType, string> = {
  eq: '=',
  ne: '!=',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
};

const comparison = (type: ComparisonType, key: string, value: AttributeValue, params: SqlParams): string => {
  if (type === 'ne') return `NOT (${comparison('eq', key, value, params)})`;
  const [column, sqlType] =
    typeof value === 'string'
      ? ['attr_string', 'String']
      : typeof value === 'number'
        ? ['attr_number', 'Float64']
        : ['attr_bool', 'Bool'];
  const k = params.bind('String', key);
  const v = params.bind(sqlType, value);
  return `(mapContains(${column}, ${k}) AND ${column}[${k}] ${OPERATORS[type]} ${v})`;
};

const membership = (key: string, values: (string | number)[], params: SqlParams): string => {
  const strings = values.filter((v): v is string => typeof v === 'string');
  const numbers = values.filter((v): v is number => typeof v === 'number');
  const parts: string[] = [];
  if (strings.length > 0) {
    const k = params.bind('String', key);
    parts.push(
      `(mapContains(attr_string, ${k}) AND has(${params.bind('Array(String)', strings)}, attr_string[${k}]))`,
    );
  }
  if (numbers.length > 0) {
    const k = params.bind('String', key);
    parts.push(
      `(mapContains(attr_number, ${k}) AND has(${params.bind('Array(Float64)', numbers)}, attr_number[${k}]))`,
    );
  }
  return parts.length === 0 ? 'false' : `(${parts.join(' OR ')})`;
};

/**
 * A boolean SQL expression over the `attr_string`, `attr_number` and `attr_bool` columns of
 * vector_store_files; `null` (no filter) compiles to `true`.
 */
export const compileFilter = (filter: Filter | null, params: SqlParams): string => {
  if (filter === null) return 'true';
  switch (filter.type) {
    case 'and':
    case 'or':
      return `(${filter.filters.map((f) => compileFilter(f, params)).join(filter.type === 'and' ? ' AND ' : ' OR ')})`;
    case 'in':
      return membership(filter.key, filter.value, params);
    case 'nin':
      return `NOT ${membership(filter.key, filter.value, params)}`;
    default:
      return comparison(filter.type, filter.key, filter.value, params);
  }
};

/** The same filter evaluated in JS: the reference the SQL is tested against. */
export const matchesFilter = (filter: Filter | null, attributes: Attributes): boolean => {
  if (filter === null) return true;
  switch (filter.type) {
    case 'and':
      return filter.filters.every((f) => matchesFilter(f, attributes));
    case 'or':
      return filter.filters.some((f) => matchesFilter(f, attributes));
    case 'in':
    case 'nin': {
      const v = attributes[filter.key];
      const found = v !== undefined && typeof v !== 'boolean' && filter.value.some((x) => x === v);
      return filter.type === 'in' ? found : !found;
    }
    case 'ne':
      return !matchesFilter({ type: 'eq', key: filter.key, value: filter.value }, attributes);
    default: {
      const v = attributes[filter.key];
      if (v === undefined || typeof v !== typeof filter.value) return false;
      if (typeof v === 'string') {
        // Byte order, as the engine compares strings.
        return compareWith(filter.type, Buffer.compare(Buffer.from(v), Buffer.from(String(filter.value))));
      }
      if (typeof v === 'boolean') return compareWith(filter.type, v === filter.value ? 0 : 1);
      const b = Number(filter.value);
      return compareWith(filter.type, v < b ? -1 : v > b ? 1 : 0);
    }
  }
};

const compareWith = (type: ComparisonType, cmp: number): boolean => {
  switch (type) {
    case 'eq':
      return cmp === 0;
    case 'ne':
      return cmp !== 0;
    case 'gt':
      return cmp > 0;
    case 'gte':
      return cmp >= 0;
    case 'lt':
      return cmp < 0;
    case 'lte':
      return cmp <= 0;
    default:
      return assertNever(type);
  }
};
