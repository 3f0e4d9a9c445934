import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream, type BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';

/**
 * multipart/form-data bodies of the primary edge (SPEC 4.1: file uploads, image edits and
 * variations), read as a stream of parts: nothing is buffered here, so a file can go to the object
 * store as it arrives. Every limit is a clear error in the edge's envelope (413 for a file or field
 * too large, 400 for a malformed body or too many parts), never a crash or a silent cut.
 */

export type MultipartPart =
  | { kind: 'field'; name: string; value: string }
  | {
      kind: 'file';
      name: string;
      filename: string;
      contentType: string;
      /** The file's bytes; refuses with a 413 once they pass `fileBytes`. Read it, or it is drained. */
      bytes: AsyncIterable<Buffer>;
    };

export interface MultipartLimits {
  /** The largest file part, in bytes. */
  fileBytes: number;
  files: number;
  fields: number;
  /** The largest non-file field, in bytes. */
  fieldBytes: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `acceptMultipart` on a multipart/form-data request: the unread body. */
    multipartBody?: Readable;
  }
}

/**
 * Lets the routes of `scope` take multipart/form-data: the body is left unread as
 * `request.multipartBody` for `multipartParts`. Routes of other scopes still answer 415 to it.
 */
export const acceptMultipart = (scope: FastifyInstance): void => {
  scope.addContentTypeParser('multipart/form-data', (request, payload, done) => {
    request.multipartBody = payload;
    done(null, undefined);
  });
};

const mib = (n: number) => `${Math.round((n / 1_048_576) * 100) / 100} MiB`;

const tooLarge = (what: string) => new ServiceError('payload_too_large', what);

/**
 * The parts of a multipart/form-data body, in order. A file part must be read (or skipped: it is
 * drained) before the next part is asked for. On any error the rest of the body is drained, so the
 * client reads the error rather than a reset connection.
 */
export async function* multipartParts(
  body: Readable | undefined,
  headers: Record<string, string | string[] | undefined>,
  limits: MultipartLimits,
): AsyncGenerator<MultipartPart> {
  const contentType = headers['content-type'];
  if (!body || typeof contentType !== 'string' || !/^multipart\/form-data\b/i.test(contentType))
    throw new ServiceError(
      'unsupported_media_type',
      `this route takes a multipart/form-data body, not ${typeof contentType === 'string' ? contentType.split(';')[0] : 'no content type'}`,
    );
  let parser: BusboyInstance;
  try {
    parser = Busboy({
      headers: { ...headers, 'content-type': contentType },
      limits: {
        fileSize: limits.fileBytes,
        files: limits.files,
        fields: limits.fields,
        fieldSize: limits.fieldBytes,
        parts: limits.files + limits.fields,
        fieldNameSize: 200,
      },
      // A part with a filename is a file whatever its content type; one without is a field.
      isPartAFile: (_name, _type, filename) => filename !== undefined,
    });
  } catch (err) {
    throw new ServiceError(
      'invalid_request_error',
      `malformed multipart/form-data body: ${(err as Error).message}`,
      {
        param: 'body',
      },
    );
  }

  type Item = MultipartPart | { kind: 'error'; error: ServiceError } | { kind: 'end' };
  const queue: Item[] = [];
  let wake: (() => void) | null = null;
  const push = (item: Item) => {
    queue.push(item);
    wake?.();
    wake = null;
  };
  const fail = (error: ServiceError) => push({ kind: 'error', error });
  // The file part being read, if any: a body or parser failure must end it too, or its reader
  // waits for bytes that never come (a client that goes away mid-upload would hang the request).
  let reading: BusboyFileStream | null = null;
  const failReading = (error: ServiceError) => {
    fail(error);
    reading?.destroy(error);
  };

  parser.on('field', (name, value, nameTruncated, valueTruncated) => {
    if (nameTruncated)
      return fail(
        new ServiceError('invalid_request_error', 'a multipart field name is longer than 200 bytes'),
      );
    if (valueTruncated)
      return fail(
        tooLarge(`multipart field ${JSON.stringify(name)} is larger than ${mib(limits.fieldBytes)}`),
      );
    push({ kind: 'field', name, value });
  });
  parser.on('file', (name, stream, filename, _encoding, mimeType) => {
    // An error before the consumer reads (a part cut short, a client gone) must not be an
    // unhandled 'error' event, which would end the process: the reader sees it as `stream.errored`.
    stream.on('error', () => {});
    reading = stream;
    stream.once('end', () => {
      if (reading === stream) reading = null;
    });
    push({
      kind: 'file',
      name,
      filename,
      contentType: mimeType,
      bytes: fileBytes(stream, name, limits.fileBytes),
    });
  });
  parser.on('filesLimit', () =>
    fail(new ServiceError('invalid_request_error', `at most ${limits.files} files in one request`)),
  );
  parser.on('fieldsLimit', () =>
    fail(new ServiceError('invalid_request_error', `at most ${limits.fields} fields in one request`)),
  );
  parser.on('partsLimit', () =>
    fail(
      new ServiceError(
        'invalid_request_error',
        `at most ${limits.files + limits.fields} parts in one request`,
      ),
    ),
  );
  parser.on('error', (err: unknown) =>
    failReading(
      new ServiceError(
        'invalid_request_error',
        `malformed multipart/form-data body: ${(err as Error)?.message ?? err}`,
        {
          param: 'body',
        },
      ),
    ),
  );
  parser.on('finish', () => push({ kind: 'end' }));
  body.on('error', () =>
    failReading(
      new ServiceError('invalid_request_error', 'the request body ended before the multipart form did'),
    ),
  );
  body.pipe(parser);

  // After the form ends this is a no-op; after an error it reads the rest of the body away.
  const drain = () => {
    body.unpipe(parser);
    body.resume();
  };
  try {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const item = queue.shift()!;
      if (item.kind === 'end') return;
      if (item.kind === 'error') throw item.error;
      yield item;
      // Whatever the consumer left of a file is skipped so the next part can arrive.
      if (item.kind === 'file') for await (const _ of item.bytes);
    }
  } finally {
    drain();
  }
}

/** A file part's bytes, refused with a 413 once past `max` (busboy cuts the part and says so). */
const fileBytes = (stream: BusboyFileStream, name: string, max: number): AsyncIterable<Buffer> => {
  let done = false;
  return {
    async *[Symbol.asyncIterator]() {
      if (done) return;
      done = true;
      try {
        if (stream.errored) throw stream.errored;
        for await (const chunk of stream) yield chunk as Buffer;
      } catch (err) {
        // busboy ends a part cut short by a malformed body with a plain error: a 400, not a 500.
        if (err instanceof ServiceError) throw err;
        throw new ServiceError(
          'invalid_request_error',
          `malformed multipart/form-data body: ${(err as Error)?.message ?? err}`,
          { param: 'body' },
        );
      }
      if (stream.truncated)
        throw tooLarge(`file ${JSON.stringify(name)} is larger than the ${mib(max)} this route accepts`);
    },
  };
};
