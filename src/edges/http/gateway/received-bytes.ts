import { Transform } from 'node:stream';
import type { FastifyRequest, preParsingHookHandler } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Body bytes received, set by `countReceivedBytes` (a chunked body sends no content-length). */
    receivedBytes?: number;
  }
}

/**
 * A preParsing hook that records how many body bytes arrived. With a content-length the body parser
 * already refuses a body of any other length, so the header is the count and the stream is left
 * alone; without one (Transfer-Encoding: chunked) the stream is counted as it is read.
 */
export const countReceivedBytes: preParsingHookHandler = (request, _reply, payload, done) => {
  // Callback style: an async hook costs a promise on every request of the hot path.
  const declared = request.headers['content-length'];
  if (declared !== undefined) {
    request.receivedBytes = Number(declared);
    done(null, payload);
    return;
  }
  request.receivedBytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, next) {
      request.receivedBytes! += chunk.length;
      next(null, chunk);
    },
  });
  payload.on('error', (err) => counted.destroy(err));
  done(null, payload.pipe(counted));
};

/** The request body's size in bytes as received: the escrow and usage estimates are made from it (SPEC 8). */
export const receivedBytes = (request: FastifyRequest): number =>
  request.receivedBytes ?? Number(request.headers['content-length'] ?? 0);
