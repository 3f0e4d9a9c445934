/** The few cookie operations the console routes need (no cookie plugin is a dependency). */

/** A request's cookies: the first value of each name, and how many times each name came. */
export interface RequestCookies {
  get(name: string): string | undefined;
  count(name: string): number;
}

export const parseCookies = (header: string | undefined): RequestCookies => {
  const first = new Map<string, string>();
  const counts = new Map<string, number>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    counts.set(name, (counts.get(name) ?? 0) + 1);
    // The first occurrence wins, as in browsers' own lookup: the most specific path comes first.
    if (!first.has(name)) first.set(name, part.slice(eq + 1).trim());
  }
  return { get: (name) => first.get(name), count: (name) => counts.get(name) ?? 0 };
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
