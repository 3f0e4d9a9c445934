import { hasControlCharacters } from './fields.js';
import { invalid, type Validated, valid } from './validated.js';

const IPV4_LOOPBACK =
  /^127\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * Hosts where plain HTTP cannot leave the machine: 127.0.0.0/8, localhost and [::1]. Takes a host
 * as `URL.hostname` gives it (IPv6 in brackets) or bare; a port is not part of a host.
 */
export const isLoopbackHost = (host: string): boolean => {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '[::1]' || h === '::1' || IPV4_LOOPBACK.test(h);
};

type Parsed = { url: URL; raw: string };

/** Shared by origins and project endpoints: parse, refuse credentials, and allow HTTP only on loopback. */
const parseHttpUrl = (field: string, value: unknown, shape: string): Validated<Parsed> => {
  if (typeof value !== 'string' || value === '') return invalid(field, `must be ${shape}`);
  if (hasControlCharacters(value) || /\s/.test(value)) {
    return invalid(field, 'must not contain whitespace or control characters');
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid(field, `must be ${shape}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return invalid(field, 'must use https (http is accepted only for a loopback host)');
  }
  // The raw authority is checked too: `https://@host` parses to an empty user and would slip by.
  const authority = value.slice(value.indexOf('//') + 2).split(/[/?#\\]/, 1)[0] ?? '';
  if (url.username !== '' || url.password !== '' || authority.includes('@')) {
    return invalid(field, 'must not contain credentials');
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    return invalid(field, 'must use https; http is accepted only for a loopback host');
  }
  // An empty `?` or `#` leaves search and hash empty, so the raw text decides.
  if (value.includes('?')) return invalid(field, 'must not contain a query');
  if (value.includes('#')) return invalid(field, 'must not contain a fragment');
  return valid({ url, raw: value });
};

/**
 * SPEC 4.7: an upstream origin (the base_url column, a catalog base_url, a derived host) has no
 * path, query, fragment or credentials, and uses HTTPS unless the host is loopback. Returns the
 * origin without a trailing slash, so callers can append `/model/...` directly.
 */
export const validateOrigin = (value: unknown, field = 'base_url'): Validated<string> => {
  const parsed = parseHttpUrl(field, value, 'an absolute URL such as https://host[:port]');
  if (!parsed.ok) return parsed;
  if (parsed.value.url.pathname !== '/') return invalid(field, 'must not contain a path');
  return valid(parsed.value.url.origin);
};

/**
 * SPEC 2.7: the project URL used only by deployment discovery keeps its path; the same scheme,
 * credential, query and fragment rules as an origin apply. Trailing slashes are dropped because
 * discovery appends `/deployments`.
 */
export const validateProjectEndpoint = (value: unknown, field: string): Validated<string> => {
  const parsed = parseHttpUrl(field, value, 'an absolute https URL of the project');
  if (!parsed.ok) return parsed;
  const { url } = parsed.value;
  return valid(`${url.origin}${url.pathname.replace(/\/+$/, '')}`);
};
