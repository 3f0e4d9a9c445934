import type { Readable } from 'node:stream';
import { createHash } from 'blake3-wasm';
import { ServiceError } from '../lib/errors.js';
import { ObjectNotFoundError, type ObjectStore } from '../objects/port.js';
import {
  type FileDeleted,
  type FileList,
  type FileObject,
  type FileScope,
  fileIdTime,
  fileObject,
  newFileId,
  objectKeyOf,
  type StoredFile,
} from './model.js';
import type { FileStore, ListQuery } from './store.js';
import { checkFilename, contentTypeOf, FILE_FIELD, UploadForm } from './upload-form.js';

/**
 * The files of the primary edge (SPEC 4.1 /v1/files): uploads streamed to the object store with
 * their byte count and blake3, metadata in the `files` table, every operation scoped to the
 * caller's organization and project.
 */

/** A part of a multipart upload form, as the edge reads it (a file part's bytes are streamed). */
export type UploadPart =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'file'; name: string; filename: string; contentType: string; bytes: AsyncIterable<Uint8Array> };

export interface FilesOptions {
  /** The largest file accepted, in bytes (SVC_FILES_MAX_BYTES). */
  maxBytes: number;
  now?: () => number;
  /** A cleanup that failed without failing the request; the sweep retries it. */
  onError?: (err: unknown, what: string) => void;
}

/** An upload begun this long ago and never finished belongs to a process that died. */
export const ABANDONED_UPLOAD_SECONDS = 24 * 3_600;
/** Rows one sweep retires or removes at most. */
const SWEEP_BATCH = 500;

/** A byte count as people read it: `512 MiB (536870912 bytes)`, `64 KiB (65536 bytes)`, `1000 bytes`. */
const sizeText = (n: number): string => {
  const [unit, size] = n >= 1_048_576 ? ['MiB', n / 1_048_576] : n >= 1_024 ? ['KiB', n / 1_024] : ['', n];
  return unit ? `${Math.round(size * 100) / 100} ${unit} (${n} bytes)` : `${n} bytes`;
};

const notFound = (id: string) =>
  new ServiceError('not_found', `no such file: ${JSON.stringify(id.slice(0, 100))}`, { param: 'file_id' });

export class Files {
  readonly maxBytes: number;
  private readonly now: () => number;
  private readonly onError: (err: unknown, what: string) => void;

  constructor(
    private readonly store: FileStore,
    private readonly objects: ObjectStore,
    options: FilesOptions,
  ) {
    this.maxBytes = options.maxBytes;
    this.now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
  }

  /**
   * Stores the file of an upload form. The file streams to the object store as it arrives, under a
   * reserved row, before the form's later fields are known (OpenAI's SDK sends the file before its
   * purpose); when the form then turns out invalid, or anything fails, the object and the row are
   * removed before the error is thrown. The file is visible to reads once this resolves.
   */
  async upload(scope: FileScope, form: AsyncIterable<UploadPart>): Promise<FileObject> {
    const fields = new UploadForm();
    let upload: { id: string; key: string } | null = null;
    let stored: { bytes: number; blake3: string } | null = null;
    try {
      for await (const part of form) {
        if (part.kind === 'field') {
          fields.take(part.name, part.value);
          continue;
        }
        if (part.name !== FILE_FIELD)
          throw new ServiceError(
            'invalid_request_error',
            `unexpected file in form field ${JSON.stringify(part.name)}: the file goes in the field named file`,
            { param: part.name },
          );
        if (upload)
          throw new ServiceError(
            'invalid_request_error',
            'the form holds more than one file; upload one per request',
            {
              param: FILE_FIELD,
            },
          );
        const filename = checkFilename(part.filename);
        const now = this.now();
        const id = newFileId(now);
        const key = objectKeyOf(scope.projectId, id);
        await this.store.reserve({
          id,
          scope,
          filename,
          contentType: contentTypeOf(part.contentType),
          objectKey: key,
          createdAt: new Date(now),
        });
        upload = { id, key };
        stored = await this.write(scope.orgId, key, part.bytes);
      }
      if (!upload || !stored)
        throw new ServiceError(
          'invalid_request_error',
          'missing required parameter file: a multipart form field named file holding the bytes to upload',
          { param: FILE_FIELD },
        );
      const { purpose, expiresAfterSeconds } = fields.complete();
      const createdAt = fileIdTime(upload.id)!.getTime();
      const file = await this.store.finish(upload.id, scope, {
        purpose,
        ...stored,
        expiresAt: expiresAfterSeconds === null ? null : new Date(createdAt + expiresAfterSeconds * 1_000),
      });
      if (!file)
        throw new ServiceError(
          'conflict',
          `the upload of ${upload.id} ran longer than ${ABANDONED_UPLOAD_SECONDS / 3_600} hours and was abandoned; upload the file again`,
        );
      return fileObject(file);
    } catch (err) {
      if (upload) await this.discard(scope.orgId, upload);
      throw err;
    }
  }

  /** Streams bytes to `key`, counting and hashing them; over `maxBytes` is a 413. */
  private async write(
    orgId: string,
    key: string,
    bytes: AsyncIterable<Uint8Array>,
  ): Promise<{ bytes: number; blake3: string }> {
    const hasher = createHash();
    const max = this.maxBytes;
    let count = 0;
    async function* measured(): AsyncGenerator<Uint8Array> {
      for await (const chunk of bytes) {
        count += chunk.byteLength;
        if (count > max)
          throw new ServiceError(
            'payload_too_large',
            `the file is larger than the ${sizeText(max)} this gateway accepts per file`,
          );
        hasher.update(chunk);
        yield chunk;
      }
    }
    let size: number;
    try {
      ({ size } = await this.objects.putStream(orgId, key, measured()));
    } catch (err) {
      hasher.dispose();
      throw err;
    }
    const blake3 = hasher.digest('hex');
    if (size !== count)
      throw new ServiceError('internal_error', `stored ${size} bytes of an upload of ${count} bytes`);
    return { bytes: count, blake3 };
  }

  /** Removes what a failed upload left; what cannot be removed now, the sweep removes later. */
  private async discard(orgId: string, upload: { id: string; key: string }): Promise<void> {
    try {
      await this.objects.delete(orgId, upload.key);
      await this.store.abandon(upload.id);
    } catch (err) {
      this.onError(err, `the failed upload ${upload.id} is not cleaned up yet; the sweep will remove it`);
    }
  }

  async list(scope: FileScope, query: ListQuery): Promise<FileList> {
    const { files, hasMore } = await this.store.list(scope, query);
    const data = files.map(fileObject);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: hasMore,
    };
  }

  async retrieve(scope: FileScope, id: string): Promise<FileObject> {
    return fileObject(await this.found(scope, id));
  }

  /**
   * The file's bytes as a stream (the caller must read or destroy it). A file deleted while this
   * opens it is a 404; a record whose bytes are not in this process's object store is a 500.
   */
  async content(scope: FileScope, id: string): Promise<{ file: FileObject; size: number; stream: Readable }> {
    const file = await this.found(scope, id);
    let read: { size: number; stream: Readable };
    try {
      read = await this.objects.getStream(scope.orgId, file.objectKey);
    } catch (err) {
      if (!(err instanceof ObjectNotFoundError)) throw err;
      if (!(await this.store.get(scope, id))) throw notFound(id);
      throw new ServiceError('internal_error', `the bytes of ${id} are missing from the object store`, {
        cause: err,
      });
    }
    if (read.size !== file.bytes) {
      read.stream.destroy();
      throw new ServiceError(
        'internal_error',
        `the stored bytes of ${id} (${read.size}) do not match its record (${file.bytes})`,
      );
    }
    return { file: fileObject(file), size: read.size, stream: read.stream };
  }

  /** Deletes a file: gone from every read at once, its bytes removed now or by the next sweep. */
  async delete(scope: FileScope, id: string): Promise<FileDeleted> {
    const file = fileIdTime(id) ? await this.store.markDeleting(scope, id) : null;
    if (!file) throw notFound(id);
    try {
      await this.objects.delete(scope.orgId, file.objectKey);
      await this.store.remove([file.id]);
    } catch (err) {
      this.onError(err, `file ${file.id} is deleted; its bytes will be removed by the sweep`);
    }
    return { id: file.id, object: 'file', deleted: true };
  }

  /**
   * Housekeeping, safe to run from every process at once: files past their expiry and uploads
   * abandoned by a process that died are retired, and retired or deleted files whose bytes are
   * still stored lose them, then their rows.
   */
  async sweep(): Promise<{ retired: number; removed: number }> {
    const retired = await this.store.retire(ABANDONED_UPLOAD_SECONDS, SWEEP_BATCH);
    const gone: string[] = [];
    for (const f of await this.store.deleting(SWEEP_BATCH)) {
      try {
        await this.objects.delete(f.orgId, f.objectKey);
        gone.push(f.id);
      } catch (err) {
        this.onError(err, `the bytes of deleted file ${f.id} are not removed; the next sweep retries`);
      }
    }
    await this.store.remove(gone);
    return { retired, removed: gone.length };
  }

  /** The caller's file `id`; anything else, whoever's and whatever its shape, is the same 404. */
  private async found(scope: FileScope, id: string): Promise<StoredFile> {
    const file = fileIdTime(id) ? await this.store.get(scope, id) : null;
    if (!file) throw notFound(id);
    return file;
  }
}
