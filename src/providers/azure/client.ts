import { Agent, type Dispatcher, request } from 'undici';
import { cappedMessage, readCapped, upstreamAgent } from '../http.js';

/**
 * The small HTTP client of the operator-side calls (deployment listings, catalog probes). They run
 * from the control plane and the CLI, not the request path; the CLI passes its own dispatcher so it
 * can close the sockets and exit.
 */

export interface HttpAnswer {
  status: number;
  text: string;
}

export type HttpResult = { ok: true; answer: HttpAnswer } | { ok: false; error: string };

export interface AzureHttp {
  send(
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<HttpResult>;
}

const describeTransport = (err: unknown): string => {
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: { code?: unknown } }).cause?.code;
  const named = typeof cause === 'string' ? cause : typeof code === 'string' ? code : null;
  return named === null ? 'no answer (transport failure)' : `no answer (${named})`;
};

export const azureHttp = (
  options: { dispatcher?: Dispatcher; timeoutMs?: number; maxBytes?: number } = {},
): AzureHttp => {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  return {
    send: async (method, url, headers, body) => {
      try {
        const response = await request(url, {
          method,
          headers,
          ...(body === undefined ? {} : { body }),
          dispatcher: options.dispatcher ?? upstreamAgent,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const { bytes, over } = await readCapped(response.body, maxBytes);
        return { ok: true, answer: { status: response.statusCode, text: cappedMessage(bytes, over) } };
      } catch (err) {
        return { ok: false, error: describeTransport(err) };
      }
    },
  };
};

/** An upstream body cut to what fits in one line of an operator-facing message. */
export const excerpt = (text: string, max = 300): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
};

/** For one-shot commands: a private pool, closed afterwards so that the process can exit. */
export const withOwnPool = async <T>(
  fn: (http: AzureHttp) => Promise<T>,
  options: { timeoutMs?: number } = {},
): Promise<T> => {
  const agent = new Agent({ keepAliveTimeout: 1_000 });
  try {
    return await fn(azureHttp({ ...options, dispatcher: agent }));
  } finally {
    await agent.close();
  }
};
