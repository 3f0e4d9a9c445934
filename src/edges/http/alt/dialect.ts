import { renderAltErrorEnvelope, renderAltReply } from '../../../gateway/render/alt.js';
import { AltStreamRenderer } from '../../../gateway/render/alt-stream.js';
import type { Dialect } from '../gateway/dialect.js';

/**
 * The alternate dialect (SPEC 4.2, 7.2): messages-style replies and event streams, the error
 * envelope with attempts under error.svc, and the request id in the header only.
 */
export const altDialect: Dialect = {
  name: 'alternate',
  error: (err) => renderAltErrorEnvelope(err),
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
