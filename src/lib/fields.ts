import { invalid, type Validated, valid } from './validated.js';

// C0, DEL and C1: none of them belongs in a label, a header value or a URL.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// The backslash counts because URL parsers read it as a path separator in http(s) URLs.
const URL_DELIMITER_OR_SPACE = /[/\\?#@:\s]/;

export const hasControlCharacters = (value: string): boolean => CONTROL.test(value);

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Absent (undefined or null) reads as an empty object; anything else must be a JSON object. */
export const objectOrEmpty = (field: string, value: unknown): Validated<Record<string, unknown>> => {
  if (value === undefined || value === null) return valid({});
  return isPlainObject(value) ? valid(value) : invalid(field, 'must be a JSON object');
};

/** The first key outside `allowed`, named with its full path, in the caller's key order. */
export const rejectUnknownKeys = (
  prefix: string,
  object: Record<string, unknown>,
  allowed: readonly string[],
  context: string,
): Validated<null> => {
  const unknown = Object.keys(object).find((key) => !allowed.includes(key));
  if (unknown === undefined) return valid(null);
  const list = allowed.length === 0 ? 'none' : allowed.join(', ');
  return invalid(`${prefix}.${unknown}`, `is not a known field for ${context} (allowed: ${list})`);
};

export const requiredString = (field: string, value: unknown): Validated<string> => {
  if (value === undefined || value === null) return invalid(field, 'is required');
  if (typeof value !== 'string' || value.trim() === '') return invalid(field, 'must be a non-empty string');
  return valid(value);
};

/** A token that travels in a header or a query parameter: no whitespace, no control characters. */
export const requiredToken = (field: string, value: unknown): Validated<string> => {
  const s = requiredString(field, value);
  if (!s.ok) return s;
  if (hasControlCharacters(s.value) || /\s/.test(s.value)) {
    return invalid(field, 'must not contain whitespace or control characters');
  }
  return s;
};

/**
 * A label the service splices into a host name (the runtime region, the resource): a delimiter
 * would let the label move the request to another host or path, so they are refused outright.
 * Any other character a host cannot hold is refused too. No list of known values is consulted.
 */
export const hostLabel = (field: string, value: unknown): Validated<string> => {
  const s = requiredString(field, value);
  if (!s.ok) return s;
  if (hasControlCharacters(s.value)) return invalid(field, 'must not contain control characters');
  if (URL_DELIMITER_OR_SPACE.test(s.value)) {
    return invalid(field, 'must not contain URL delimiters (/ \\ ? # @ :) or whitespace');
  }
  if (!formsHost(s.value)) return invalid(field, 'must be usable as part of a host name');
  return s;
};

/** A host suffix such as `openai.azure.com`: dot-separated labels, nothing else. */
export const hostSuffix = (field: string, value: unknown): Validated<string> => {
  const s = requiredString(field, value);
  if (!s.ok) return s;
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(s.value)) {
    return invalid(field, 'must be a host name suffix such as openai.azure.com (no scheme, port or path)');
  }
  return valid(s.value.toLowerCase());
};

const formsHost = (label: string): boolean => {
  try {
    return new URL(`https://${label}.invalid`).hostname === `${label.toLowerCase()}.invalid`;
  } catch {
    return false;
  }
};
