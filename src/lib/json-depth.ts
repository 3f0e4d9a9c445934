/**
 * How deep a JSON text nests, measured on the text before it is parsed. Parsing itself is
 * iterative, but everything that walks the parsed value afterwards (serializers, translations,
 * validators, the recorded body) recurses: a body nested thousands of levels deep would overflow
 * the stack there, after the request was admitted. Refusing it here keeps that from happening.
 */

/** Deeper than any model request body needs; far below what recursive walkers survive. */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Whether `text` opens more than `limit` objects or arrays inside one another (strings skipped). */
export const nestsDeeperThan = (text: string, limit: number): boolean => {
  // A text cannot nest deeper than the number of characters it has.
  if (text.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
};

/**
 * A JSON text held inside a JSON string (tool-call arguments), parsed only when it nests no deeper
 * than MAX_JSON_DEPTH: the body's own depth check cannot see inside strings.
 */
export const parseNested = (text: string): { ok: true; value: unknown } | { ok: false; why: string } => {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    return { ok: false, why: `nests deeper than ${MAX_JSON_DEPTH} levels` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, why: 'is not JSON' };
  }
};
