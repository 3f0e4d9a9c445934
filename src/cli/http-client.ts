import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeError } from '../lib/errors.js';
import { CliError } from './output.js';
import { dataDirOf, readConfig } from './runtime.js';

/**
 * How the verbs that call this deployment's HTTP API find it, and as whom: the flag, then the
 * environment variable the verb names, then this deployment (127.0.0.1 on SVC_HTTP_PORT, the admin
 * token from SVC_ADMIN_TOKEN or the data dir's secrets.json).
 */

export const storedAdminToken = (dataDir: string): string | undefined => {
  const path = join(dataDir, 'secrets.json');
  if (!existsSync(path)) return undefined;
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { admin_token?: string }).admin_token;
  } catch {
    return undefined;
  }
};

export interface ApiTarget {
  url: string;
  token: string;
}

export const apiTarget = (
  flags: { url?: string; token?: string },
  fallback: { url?: string; token?: string; missingToken: string },
): ApiTarget => {
  let url = flags.url ?? fallback.url;
  let token = flags.token ?? fallback.token;
  if (!url || !token) {
    const config = readConfig();
    url ??= `http://127.0.0.1:${config.SVC_HTTP_PORT}`;
    token ??= config.SVC_ADMIN_TOKEN ?? storedAdminToken(dataDirOf(config));
  }
  if (!token) throw new CliError(fallback.missingToken);
  return { url: url.replace(/\/+$/, ''), token };
};

/**
 * One call; a refusal becomes a one-line CliError carrying the server's message. `what` names the
 * API in messages ("the audit API"). Answers the parsed JSON, or the raw bytes with `raw`.
 */
export async function callApi<T>(
  target: ApiTarget,
  what: string,
  method: string,
  path: string,
  options?: { body?: unknown; raw?: false },
): Promise<T>;
export async function callApi(
  target: ApiTarget,
  what: string,
  method: string,
  path: string,
  options: { body?: unknown; raw: true },
): Promise<Buffer>;
export async function callApi(
  target: ApiTarget,
  what: string,
  method: string,
  path: string,
  options: { body?: unknown; raw?: boolean } = {},
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
  } catch (err) {
    throw new CliError(`cannot reach ${what} at ${target.url}: ${describeError(err)}`);
  }
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.ok && options.raw) return bytes;
  const text = bytes.toString('utf8');
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const message = (parsed as { message?: unknown } | null)?.message;
    throw new CliError(
      `${what} answered ${res.status}: ${typeof message === 'string' ? message : text.slice(0, 200)}`,
    );
  }
  return parsed;
}
