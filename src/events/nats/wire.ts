import { type MsgHdrs, NatsError, headers as natsHeaders } from 'nats';
import { BusUnavailableError } from '../bus.js';

/** How the NATS client's errors and headers read in the bus port's terms. */

const UNAVAILABLE_CODES = new Set<string>([
  'TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DRAINING',
  'CONNECTION_REFUSED',
  'CONNECTION_TIMEOUT',
  'DISCONNECT',
  '503', // no responders: JetStream or the stream's leader is not there right now
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
]);

export const unavailable = (what: string, err: unknown): unknown => {
  if (err instanceof BusUnavailableError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) {
    return new BusUnavailableError(`${what}: ${(err as Error).message || code}`, { cause: err });
  }
  return err;
};

export const STREAM_NOT_FOUND = 10059;
export const CONSUMER_NOT_FOUND = 10014;
export const isApiError = (err: unknown, errCode: number) =>
  err instanceof NatsError && err.api_error?.err_code === errCode;

/** User headers only: the server's own (Nats-Msg-Id, ...) are read into fields instead. */
export const userHeaders = (h: MsgHdrs | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  if (!h) return out;
  for (const key of h.keys()) if (!/^nats-/i.test(key)) out[key] = h.get(key);
  return out;
};

export const toNatsHeaders = (record: Record<string, string> | undefined): MsgHdrs | undefined => {
  if (!record || Object.keys(record).length === 0) return undefined;
  const h = natsHeaders();
  for (const [k, v] of Object.entries(record)) h.set(k, v);
  return h;
};
