/** The few cookie operations the console routes need (no cookie plugin is a dependency). */

export const parseCookies = (header: string | undefined): Map<string, string> => {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    // The first occurrence wins, as in browsers' own lookup: the most specific path comes first.
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
};

export interface CookieOptions {
  path: string;
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
  secure: boolean;
}

/** Always HttpOnly and SameSite=Lax: scripts never read these, and cross-site POSTs never carry them. */
export const serializeCookie = (name: string, value: string, options: CookieOptions): string =>
  [
    `${name}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${Math.max(0, Math.floor(options.maxAge))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
