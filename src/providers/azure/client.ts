import { Agent, type Dispatcher, request } from 'undici';
import { type Destination, DestinationRefused, guardedAgent, processPolicy } from '../destinations.js';
import { agentFor, cappedMessage, readCapped, withHop } from '../http.js';

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
    /** Whose choice the URL is; a tenant's is checked on the address dialled. Default operator. */
    destination?: Destination,
  ): Promise<HttpResult>;
}

const describeTransport = (err: unknown): string => {
  if (err instanceof DestinationRefused) return `not called: ${err.message}`;
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: { code?: unknown } }).cause?.code;
  const named = typeof cause === 'string' ? cause : typeof code === 'string' ? code : null;
  return named === null ? 'no answer (transport failure)' : `no answer (${named})`;
};

export const azureHttp = (
  options: {
    dispatcher?: Dispatcher;
    /** The pool for tenant URLs; the process's checked pool unless given. */
    tenantDispatcher?: Dispatcher;
    timeoutMs?: number;
    maxBytes?: number;
  } = {},
): AzureHttp => {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const pool = (destination: Destination) =>
    (destination === 'tenant' ? options.tenantDispatcher : options.dispatcher) ?? agentFor(destination);
  return {
    send: async (method, url, headers, body, destination = 'operator') => {
      try {
        const response = await request(url, {
          method,
          headers: withHop(headers),
          ...(body === undefined ? {} : { body }),
          dispatcher: pool(destination),
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

/**
 * For one-shot commands: private pools, closed afterwards so that the process can exit. Tenant URLs
 * are checked as in `svc serve`, with the operator's SVC_TENANT_PRIVATE_DESTINATIONS.
 */
export const withOwnPool = async <T>(
  fn: (http: AzureHttp) => Promise<T>,
  options: { timeoutMs?: number; allowPrivateDestinations?: boolean } = {},
): Promise<T> => {
  const agent = new Agent({ keepAliveTimeout: 1_000 });
  const policy = { allowPrivate: options.allowPrivateDestinations === true, isSelf: processPolicy.isSelf };
  const tenant = guardedAgent(policy, { keepAliveTimeout: 1_000 });
  try {
    const http = azureHttp({
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      dispatcher: agent,
      tenantDispatcher: tenant,
    });
    return await fn(http);
  } finally {
    await Promise.all([agent.close(), tenant.close()]);
  }
};
