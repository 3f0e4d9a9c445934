/**
 * What PostgreSQL can store of a JSON value. `text` and `jsonb` refuse U+0000 ("unsupported Unicode
 * escape sequence"), `jsonb` refuses an unpaired UTF-16 surrogate (which any JSON body can carry as
 * `"\ud800"`), and a deeply nested value costs the server (and `JSON.stringify` here) one stack
 * frame per level. Edges refuse such values with a 400 naming the field before anything is stored;
 * the event store checks again before it appends, so nothing reaches `jsonb` that it refuses.
 */

/** Deeper than any body or event this service defines; far below what would strain a stack. */
export const MAX_STORABLE_DEPTH = 64;

export interface Unstorable {
  /** Where in the value: object keys and array indices, outermost first. */
  path: (string | number)[];
  /** Why, phrased to follow the field's name. */
  problem: string;
}

/** String.prototype.isWellFormed (ES2024; every supported Node has it). */
type WellFormedText = string & { isWellFormed(): boolean };

/** Why a string cannot be stored, or null when it can. */
export const unstorableText = (text: string): string | null => {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!(text as WellFormedText).isWellFormed())
    return 'must be well-formed Unicode (an unpaired surrogate such as \\ud800 cannot be stored)';
  return null;
};

/**
 * The first string, object key or nesting level of `value` that PostgreSQL would refuse, or null.
 * Walks with its own stack, so a value nested thousands of levels deep cannot overflow this one.
 */
export const unstorableIn = (value: unknown, maxDepth = MAX_STORABLE_DEPTH): Unstorable | null => {
  type Pending = { value: unknown; path: (string | number)[]; key?: string };
  const pending: Pending[] = [{ value, path: [] }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value: v, path, key } = next;
    const keyProblem = key === undefined ? null : unstorableText(key);
    if (keyProblem) return { path, problem: `(as a key) ${keyProblem}` };
    if (typeof v === 'string') {
      const problem = unstorableText(v);
      if (problem) return { path, problem };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= maxDepth)
      return { path, problem: `must not nest objects or arrays more than ${maxDepth} levels deep` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push({ value: v[i], path: [...path, i] });
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, item] = entries[i]!;
      pending.push({ value: item, path: [...path, k], key: k });
    }
  }
  return null;
};

/** A path as a field name: `metadata.deployments.gpt-4o`, `messages.0.content`; `body` at the root. */
export const fieldOf = (path: readonly (string | number)[]): string =>
  path.length === 0 ? 'body' : path.map(String).join('.');
