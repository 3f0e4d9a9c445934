import { ServiceError } from '../lib/errors.js';
import { StreamFailure } from '../providers/provider.js';
import type { FrameSink, RequestScope } from './scope.js';

/**
 * Relays a committed stream (its first item, then the rest) until the upstream ends or the client
 * leaves, then releases the client. Returns the failure that ends the stream in band (a read
 * failure, an in-band error, the size cap: SPEC 4.1 rule 5, 7.6 rule 1), or undefined; a client
 * that went away is not one, and its partial usage is still priced by the caller.
 */
export const relayCommitted = async <C>(
  scope: RequestScope,
  result: { first?: C; rest?: AsyncIterator<C> },
  sink: FrameSink,
  relay: (item: C) => Promise<void>,
): Promise<ServiceError | undefined> => {
  try {
    if (result.first) await relay(result.first);
    for (;;) {
      if (sink.closed) break;
      const next = await result.rest!.next();
      if (next.done) break;
      await relay(next.value);
    }
    return undefined;
  } catch (err) {
    if (scope.abort!.signal.aborted) return undefined;
    const message = err instanceof StreamFailure ? err.message : 'upstream stream failed';
    return new ServiceError('upstream_stream_error', message);
  } finally {
    if (sink.closed) await result.rest!.return?.();
  }
};
