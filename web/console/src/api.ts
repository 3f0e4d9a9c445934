/**
 * The console's one way to the service: same-origin `/api` calls carrying the HTTP-only session
 * cookie (the browser attaches it), with the session's CSRF token on every state-changing request.
 * Query routes (SPEC 4.5) are reached through the console's proxy prefix `/api/query`.
 */

export type Params = Record<string, string | number | boolean | null | undefined>;

/** An `/api` error answer (SPEC 7.6 envelope: error, message, param). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
/** Set once the session is known (main.tsx); sent as x-csrf-token on POST, PUT, PATCH and DELETE. */
export const setCsrfToken = (token: string): void => {
  csrfToken = token;
};

/** `path` with the defined parameters as its query string. */
export const urlOf = (path: string, params: Params = {}): string => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    search.set(k, String(v));
  }
  const qs = search.toString();
  return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
};

/** A query route of SPEC 4.5 (`/requests`, `/usage`, ...) through the console's proxy. */
export const queryPath = (route: string): string => `/api/query${route.startsWith('/') ? '' : '/'}${route}`;

const errorOf = async (res: Response): Promise<ApiError> => {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON: the status says what there is to say.
  }
  const b = (body ?? {}) as { error?: unknown; message?: unknown; param?: unknown };
  const code = typeof b.error === 'string' ? b.error : `http_${res.status}`;
  const message = typeof b.message === 'string' ? b.message : `${res.status} ${res.statusText}`;
  return new ApiError(res.status, code, message, typeof b.param === 'string' ? b.param : undefined);
};

const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return undefined as T;
  const type = res.headers.get('content-type') ?? '';
  return (type.includes('json') ? await res.json() : await res.text()) as T;
};

export const api = {
  get: <T>(path: string, params?: Params): Promise<T> => call<T>('GET', urlOf(path, params)),
  post: <T>(path: string, body?: unknown): Promise<T> => call<T>('POST', path, body ?? {}),
  put: <T>(path: string, body?: unknown): Promise<T> => call<T>('PUT', path, body ?? {}),
  patch: <T>(path: string, body?: unknown): Promise<T> => call<T>('PATCH', path, body ?? {}),
  delete: <T>(path: string): Promise<T> => call<T>('DELETE', path),
};

/** The signed-in user and what the session may see (GET /api/session). */
export interface ConsoleSession {
  user: { user_id: string; email: string };
  expires_at: string;
  csrf_token: string;
  /** A platform administrator's session (SVC_PLATFORM_ADMINS): grants and operator settings. */
  admin: boolean;
  workspaces: { workspace_id: string; name: string; role: 'manager' | 'member' }[];
}

/**
 * Starts a browser download of `path` (an export route answering an attachment). A plain link
 * would do for GET routes; this keeps errors visible on the page instead of a blank tab.
 */
export const download = async (path: string, fallbackName: string): Promise<void> => {
  const res = await fetch(path, { credentials: 'same-origin' });
  if (!res.ok) throw await errorOf(res);
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] ?? fallbackName;
  const blob = await res.blob();
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
};
