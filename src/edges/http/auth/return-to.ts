const MAX_LENGTH = 2_048;
const PROBE_ORIGIN = 'http://return-to.invalid';

/**
 * The path a sign-in may send the browser back to: a relative path on this origin, else '/'.
 * Browsers read '\' as '/' and drop tabs and newlines inside URLs, so '/\evil', '/\t/evil' and
 * '//evil' would all leave the origin; any backslash or control character is refused outright.
 */
export const safeReturnPath = (value: unknown): string => {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LENGTH) return '/';
  if (!value.startsWith('/') || value.startsWith('//')) return '/';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\' || code < 0x20 || code === 0x7f) return '/';
  }
  try {
    // Dot segments can normalise to a leading '//' ('/..//evil'): refused too, and the value is
    // answered as given rather than normalised, so no rewriting can create one.
    const resolved = new URL(value, PROBE_ORIGIN);
    if (resolved.origin !== PROBE_ORIGIN || resolved.pathname.startsWith('//')) return '/';
    return value;
  } catch {
    return '/';
  }
};
