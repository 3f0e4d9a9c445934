import { renderPrimaryError, type ServiceError } from '../../lib/errors.js';
import { dataFrame } from '../../lib/sse.js';
import type { CanonicalChunk, CanonicalReply, Usage } from '../../providers/contract.js';
import { type ReplyIdentity, renderPrimaryChunk, renderPrimaryReply } from './primary.js';
import { DONE_FRAME } from './relayed.js';

/** Turns one reply's canonical chunks into the frames of a dialect's stream, in order. */
export interface StreamRenderer {
  /** Frames for one chunk (possibly none, possibly several). */
  chunk(chunk: CanonicalChunk): string[];
  /** The closing frames of a stream that ended normally; `usage` is the terminal usage known. */
  end(usage: Usage | null): string[];
  /** The closing frames of a stream that failed after it began (SPEC 7.6 rule 1). */
  error(err: ServiceError): string[];
}

/** How an edge speaks: its error envelope, buffered reply and stream framing. */
export interface Dialect {
  name: 'primary' | 'alternate';
  /** The error body; `requestId` is given when the envelope carries it. */
  error(err: ServiceError, requestId: string): unknown;
  /** The HTTP status of an error in this dialect; absent means the catalogue's (or the error's own). */
  status?(err: ServiceError): number;
  reply(reply: CanonicalReply, who: ReplyIdentity): unknown;
  stream(who: ReplyIdentity, options: { includeUsage: boolean }): StreamRenderer;
  /** Identity of a reply: the primary dialect's `chatcmpl-...`, the alternate's `msg_...`. */
  replyId(requestId: string): string;
}

export const primaryDialect: Dialect = {
  name: 'primary',
  error: (err, requestId) => renderPrimaryError(err, requestId),
  reply: (r, who) => renderPrimaryReply(r, who),
  replyId: (requestId) => `chatcmpl-${requestId.slice(requestId.indexOf('_') + 1)}`,
  stream: (who, { includeUsage }) => ({
    chunk: (c) => {
      const frame = renderPrimaryChunk(c, who, includeUsage);
      return frame ? [dataFrame(JSON.stringify(frame))] : [];
    },
    end: () => [DONE_FRAME],
    error: (err) => [dataFrame(JSON.stringify(renderPrimaryError(err, who.requestId))), DONE_FRAME],
  }),
};
