/**
 * Canonical JSON: object keys sorted by UTF-16 code unit (JavaScript's string order: code point
 * order, except that characters past U+FFFF sort before U+E000-U+FFFF), no insignificant
 * whitespace. Two writers that mean the same record produce the same bytes, which is what audit
 * hashing needs.
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new Error('canonical JSON has no NaN or Infinity');
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value))
    return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
};

const keysSorted = (value: unknown): boolean => {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(keysSorted);
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) if (!(keys[i - 1]! < keys[i]!)) return false;
  return keys.every((k) => keysSorted((value as Record<string, unknown>)[k]));
};

/**
 * Whether `text` is the canonical JSON of `parsed`, its JSON.parse: `canonicalJson(parsed) === text`,
 * mostly without building that string. JSON.stringify keeps the parsed key order, so text it
 * reproduces exactly, with every object's keys already sorted, is canonical; anything else (keys
 * that look like array indexes, which objects reorder, included) is decided the long way.
 */
export const isCanonicalJsonText = (parsed: unknown, text: string): boolean => {
  if (JSON.stringify(parsed) === text) return keysSorted(parsed);
  try {
    return canonicalJson(parsed) === text;
  } catch {
    return false;
  }
};
