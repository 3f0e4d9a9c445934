import { ERROR_CATALOGUE } from '../../lib/errors.js';
import { renderAltErrorEnvelope, renderAltReply } from './alt.js';
import { AltStreamRenderer } from './alt-stream.js';
import type { Dialect } from './dialect.js';

/**
 * The alternate dialect (SPEC 4.2, 7.2): messages-style replies and event streams, the error
 * envelope with attempts under error.svc, and the request id in the header only.
 */
/** SPEC 7.2: the alternate envelope's status follows its error type. */
export const ALT_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

export const altDialect: Dialect = {
  name: 'alternate',
  error: (err) => renderAltErrorEnvelope(err),
  status: (err) => ALT_STATUS[ERROR_CATALOGUE[err.code].altType] ?? err.status,
  reply: (r, who) => renderAltReply(r, who),
  replyId: (requestId) => `msg_${requestId.slice(requestId.indexOf('_') + 1)}`,
  stream: (who) => {
    const renderer = new AltStreamRenderer(who);
    return {
      chunk: (c) => renderer.chunk(c),
      end: (usage) => renderer.end(usage),
      error: (err) => renderer.error(err),
    };
  },
};
