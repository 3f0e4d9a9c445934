/**
 * The user agent side of a sign-in through the fake OpenID provider: plain fetch with a cookie jar
 * and redirects followed by hand, so tests can stop at any hop, read or tamper with cookies, and
 * see every Location. Cookies are scoped like a browser's: by host (not port) and path prefix.
 */

interface StoredCookie {
  name: string;
  value: string;
  host: string;
  path: string;
  httpOnly: boolean;
  sameSite: string | null;
  maxAge: number | null;
}

export interface Hop {
  url: string;
  status: number;
  location: string | null;
}

const parseSetCookie = (header: string, url: URL): StoredCookie | null => {
  const [pair, ...attributes] = header.split(';').map((s) => s.trim());
  const eq = pair?.indexOf('=') ?? -1;
  if (!pair || eq <= 0) return null;
  const cookie: StoredCookie = {
    name: pair.slice(0, eq),
    value: pair.slice(eq + 1),
    host: url.hostname,
    path: '/',
    httpOnly: false,
    sameSite: null,
    maxAge: null,
  };
  for (const attribute of attributes) {
    const [key = '', value = ''] = attribute.split('=');
    const k = key.toLowerCase();
    if (k === 'path') cookie.path = value || '/';
    else if (k === 'httponly') cookie.httpOnly = true;
    else if (k === 'samesite') cookie.sameSite = value;
    else if (k === 'max-age') cookie.maxAge = Number(value);
    else if (k === 'expires' && Date.parse(value) <= Date.now()) cookie.maxAge = 0;
  }
  return cookie;
};

const pathMatches = (cookiePath: string, requestPath: string) =>
  requestPath === cookiePath ||
  (requestPath.startsWith(cookiePath) &&
    (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/'));

export class Browser {
  private readonly jar = new Map<string, StoredCookie>();

  /** The cookie the jar would send to `url` under `name`, if any. */
  cookie(name: string, url?: string): StoredCookie | undefined {
    const target = url ? new URL(url) : null;
    return [...this.jar.values()].find(
      (c) =>
        c.name === name && (!target || (c.host === target.hostname && pathMatches(c.path, target.pathname))),
    );
  }

  setCookieValue(name: string, value: string): void {
    for (const c of this.jar.values()) if (c.name === name) c.value = value;
  }

  dropCookie(name: string): void {
    for (const [key, c] of this.jar) if (c.name === name) this.jar.delete(key);
  }

  private cookieHeader(url: URL): string {
    return [...this.jar.values()]
      .filter((c) => c.host === url.hostname && pathMatches(c.path, url.pathname))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  /** One request, no redirect followed; the jar takes every Set-Cookie. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const headers = new Headers(init.headers);
    const cookies = this.cookieHeader(target);
    if (cookies) headers.set('cookie', cookies);
    const res = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const header of res.headers.getSetCookie()) {
      const cookie = parseSetCookie(header, target);
      if (!cookie) continue;
      const key = `${cookie.host}|${cookie.path}|${cookie.name}`;
      if (cookie.maxAge !== null && cookie.maxAge <= 0) this.jar.delete(key);
      else this.jar.set(key, cookie);
    }
    return res;
  }

  /**
   * GETs `url` and follows redirects while `follow(nextUrl)` allows; answers the last response and
   * every hop. A relative Location resolves against the URL that sent it.
   */
  async navigate(
    url: string,
    follow: (next: URL) => boolean = () => true,
    maxHops = 20,
  ): Promise<{ response: Response; hops: Hop[] }> {
    const hops: Hop[] = [];
    let current = url;
    for (let i = 0; i < maxHops; i++) {
      const response = await this.request(current);
      const location = response.headers.get('location');
      hops.push({ url: current, status: response.status, location });
      if (response.status < 300 || response.status >= 400 || !location) return { response, hops };
      const next = new URL(location, current);
      if (!follow(next)) return { response, hops };
      await response.arrayBuffer();
      current = next.toString();
    }
    throw new Error(`too many redirects from ${url}: ${JSON.stringify(hops)}`);
  }
}
