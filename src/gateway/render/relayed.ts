import { ERROR_CATALOGUE, type ServiceError } from '../../lib/errors.js';
import { eventFrame } from '../../lib/sse.js';
import type { RelayedEvent } from '../../providers/provider.js';

/** An upstream event written back as it came (a multi-line payload keeps one data line per line). */
export const frameOf = (e: RelayedEvent): string =>
  `${e.event === undefined ? '' : `event: ${e.event}\n`}data: ${e.data.replaceAll('\n', '\ndata: ')}\n\n`;

/** The Responses stream's own error event, for a stream that failed after it began (SPEC 7.6 rule 1). */
export const relayedErrorFrame = (err: ServiceError, requestId: string): string =>
  eventFrame(
    'error',
    JSON.stringify({
      type: 'error',
      code: err.displayCode ?? err.code,
      message: err.message,
      param: null,
      error_type: ERROR_CATALOGUE[err.code].primaryType,
      request_id: requestId,
    }),
  );

/** Ends a failed stream after its error event (SPEC 4.1 rule 5, 7.6 rule 1), as chat's does. */
export const DONE_FRAME = 'data: [DONE]\n\n';
