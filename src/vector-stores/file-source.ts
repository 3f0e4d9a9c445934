import { fileIdTime } from '../files/model.js';
import type { Files } from '../files/service.js';
import type { FileStore } from '../files/store.js';
import { ServiceError } from '../lib/errors.js';
import type { FileSource } from './ports.js';

const gone = (err: unknown): boolean => err instanceof ServiceError && err.code === 'not_found';

/**
 * The Files module (src/files) as the vector stores read it, with its own scoping: a file of
 * another project, deleted or expired, is null here as it is a 404 there.
 */
export const filesSource = (files: Files, store: FileStore): FileSource => ({
  describe: async (scope, fileId) => {
    try {
      const file = await files.retrieve(scope, fileId);
      return { filename: file.filename };
    } catch (err) {
      if (gone(err)) return null;
      throw err;
    }
  },
  existing: (scope, fileIds) => store.shown(scope, fileIds),
  read: async (scope, fileId, maxBytes) => {
    // The declared content type is on the row, not on the API's file object.
    const stored = fileIdTime(fileId) ? await store.get(scope, fileId) : null;
    if (!stored) return null;
    const meta = { filename: stored.filename, contentType: stored.contentType, size: stored.bytes };
    if (stored.bytes > maxBytes) return { ...meta, bytes: null };
    let content: Awaited<ReturnType<Files['content']>>;
    try {
      content = await files.content(scope, fileId);
    } catch (err) {
      if (gone(err)) return null;
      throw err;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of content.stream) chunks.push(chunk as Buffer);
    return { ...meta, bytes: Buffer.concat(chunks) };
  },
});
