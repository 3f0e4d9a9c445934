import { ServiceError } from '../../lib/errors.js';
import type { AttemptFailure } from '../../providers/provider.js';
import type { AttemptRecord } from '../pipeline.js';

/** How one failed attempt is shown to the caller: status, code and message (SPEC 7.1, 7.3). */
const surface = (
  f: AttemptFailure,
): { code: ServiceError['code']; status: number; message: string; displayCode?: string; param?: string } => {
  if (f.surface) return { ...f.surface, message: f.providerMessage ?? f.message };
  switch (f.kind) {
    case 'MissingProviderKey':
      return { code: 'connection_not_configured', status: 503, message: f.message };
    case 'Timeout':
      return { code: 'upstream_error', status: 504, message: f.message };
    case 'ResponseTooLarge':
    case 'UpstreamError':
    case 'Internal':
      return { code: 'upstream_error', status: 502, message: f.message };
    case 'UpstreamStatus': {
      const s = f.status_code ?? 502;
      const message = f.providerMessage ?? f.message;
      if (s === 429) return { code: 'rate_limit_error', status: 429, message };
      // An overloaded upstream (529): overloaded_error on the alternate edge, 503 on the primary.
      if (s === 529) return { code: 'service_unavailable', status: 503, message };
      // The upstream's own rejection of the request: its code and param reach the client, so an
      // SDK user reads what the provider said, not the gateway's generic code (SPEC 7.1, 7.3).
      if (s >= 400 && s < 500 && s !== 401 && s !== 403 && s !== 404)
        return {
          code: 'invalid_request_error',
          status: s,
          message,
          ...(f.providerCode ? { displayCode: f.providerCode } : {}),
          ...(f.providerParam ? { param: f.providerParam } : {}),
        };
      return { code: 'upstream_error', status: 502, message };
    }
    default: {
      const unknown: never = f.kind;
      return { code: 'upstream_error', status: 502, message: String(unknown) };
    }
  }
};

/**
 * The error of a request whose attempts all failed: one attempt is rendered directly with the
 * provider's own message; several carry the SPEC 2.4 trail in `attempts`.
 */
export const failureError = (
  attempts: readonly AttemptRecord[],
  failures: readonly AttemptFailure[],
): ServiceError => {
  const last = failures.at(-1);
  if (!last)
    return new ServiceError('upstream_error', 'the request was cancelled before any attempt completed', {
      status: 499,
    });
  const shown = surface(last);
  if (failures.length === 1) {
    return new ServiceError(shown.code, shown.message, {
      status: shown.status,
      ...(shown.displayCode ? { displayCode: shown.displayCode } : {}),
      ...(shown.param ? { param: shown.param } : {}),
      ...(last.providerCode && !shown.displayCode ? { details: { provider_code: last.providerCode } } : {}),
    });
  }
  const trail = attempts
    .filter((a) => a.outcome === 'failure')
    .map((a) => ({ source: a.source, kind: a.kind, status_code: a.status_code, message: a.message }));
  return new ServiceError(shown.code, `all ${failures.length} attempts failed; the last: ${shown.message}`, {
    status: shown.status,
    ...(shown.displayCode ? { displayCode: shown.displayCode } : {}),
    details: { attempts: trail },
  });
};
