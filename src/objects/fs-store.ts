import { randomBytes } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import {
  access,
  type FileHandle,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  unlink,
} from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import {
  assertKeyPrefix,
  assertObjectKey,
  assertOrgId,
  type ObjectInfo,
  ObjectNotFoundError,
  ObjectRangeError,
  type ObjectReadStream,
  type ObjectStore,
  ObjectStoreError,
  type ObjectStoreHealth,
  TEMP_PREFIX,
} from './port.js';

/** Where the embedded object store keeps its files under SVC_DATA_DIR. */
export const objectsPath = (dataDir: string): string => join(dataDir, 'objects');

const errnoOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/** Errors meaning "there is no file at this key" (a missing or non-directory parent included). */
const ABSENT = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);

/** Makes directory entries durable: a renamed or created name survives a power cut once synced. */
const syncDirectory = async (dir: string): Promise<void> => {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
};

/**
 * The filesystem adapter: `<root>/<orgId>/<key>`. A write goes to a temporary file in the target's
 * directory, is fsynced, then renamed over the target (and the directory fsynced), so concurrent
 * writers and crashes leave either the old object or a complete new one, never a torn file.
 */
export class FsObjectStore implements ObjectStore {
  readonly adapter = 'fs' as const;

  constructor(readonly root: string) {}

  put(orgId: string, key: string, data: Uint8Array | string): Promise<ObjectInfo> {
    return this.writeAtomically(orgId, key, (handle) => handle.writeFile(data));
  }

  putStream(orgId: string, key: string, source: AsyncIterable<Uint8Array>): Promise<ObjectInfo> {
    return this.writeAtomically(orgId, key, async (handle) => {
      // One chunk at a time: the source is not pulled again until its chunk is written, so a slow
      // disk slows the sender (back-pressure) instead of filling memory.
      let position = 0;
      for await (const chunk of source) {
        let done = 0;
        while (done < chunk.byteLength) {
          const { bytesWritten } = await handle.write(chunk, done, chunk.byteLength - done, position + done);
          done += bytesWritten;
        }
        position += chunk.byteLength;
      }
    });
  }

  /**
   * Writes through `write` into a temporary file beside the target, fsyncs it and renames it over
   * the target (then fsyncs the directory). Any failure, `write`'s included, removes the temporary
   * file and leaves the target as it was.
   */
  private async writeAtomically(
    orgId: string,
    key: string,
    write: (handle: FileHandle) => Promise<void>,
  ): Promise<ObjectInfo> {
    const target = this.pathOf(orgId, key);
    const dir = dirname(target);
    const created = await mkdir(dir, { recursive: true }).catch((err: unknown) => {
      throw this.conflictOr(err, orgId, key);
    });
    const temp = join(dir, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
    let info: ObjectInfo;
    const handle = await open(temp, 'wx', 0o644);
    try {
      await write(handle);
      await handle.sync();
      const s = await handle.stat();
      info = { key, size: s.size, modifiedAt: s.mtime };
    } catch (err) {
      await handle.close().catch(() => {});
      await rm(temp, { force: true });
      throw err;
    }
    await handle.close();
    try {
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw this.conflictOr(err, orgId, key);
    }
    if (created === undefined) await syncDirectory(dir);
    else await this.syncCreated(created, dir);
    return info;
  }

  async get(orgId: string, key: string): Promise<Buffer> {
    const path = this.pathOf(orgId, key);
    try {
      return await readFile(path);
    } catch (err) {
      throw this.notFoundOr(err, orgId, key);
    }
  }

  async getStream(orgId: string, key: string): Promise<ObjectReadStream> {
    const path = this.pathOf(orgId, key);
    const handle = await open(path, 'r').catch((err: unknown) => {
      throw this.notFoundOr(err, orgId, key);
    });
    // The open file is one version: a put renames another file in, a delete unlinks the name only.
    try {
      const s = await handle.stat();
      if (!s.isFile()) throw new ObjectNotFoundError(orgId, key);
      // The stream closes the file when it ends or is destroyed.
      return { size: s.size, stream: handle.createReadStream({ autoClose: true }) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async getRange(orgId: string, key: string, offset: number, length: number): Promise<Buffer> {
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
      throw new ObjectRangeError(
        `range offset ${offset} length ${length} is not a pair of non-negative integers`,
      );
    }
    const path = this.pathOf(orgId, key);
    const handle = await open(path, 'r').catch((err: unknown) => {
      throw this.notFoundOr(err, orgId, key);
    });
    // One open file is one version: a concurrent put renames a new file in, this one stays whole.
    try {
      const s = await handle.stat();
      // Opening a directory succeeds on Linux; a prefix of other keys is not an object.
      if (!s.isFile()) throw new ObjectNotFoundError(orgId, key);
      const size = s.size;
      if (offset + length > size) {
        throw new ObjectRangeError(`range ${offset}+${length} is past the end of ${key} (${size} bytes)`);
      }
      const out = Buffer.alloc(length);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await handle.read(out, filled, length - filled, offset + filled);
        if (bytesRead === 0) throw new ObjectRangeError(`${key} ended at ${offset + filled} while reading`);
        filled += bytesRead;
      }
      return out;
    } finally {
      await handle.close();
    }
  }

  async stat(orgId: string, key: string): Promise<ObjectInfo> {
    const path = this.pathOf(orgId, key);
    const s = await stat(path).catch((err: unknown) => {
      throw this.notFoundOr(err, orgId, key);
    });
    if (!s.isFile()) throw new ObjectNotFoundError(orgId, key);
    return { key, size: s.size, modifiedAt: s.mtime };
  }

  async delete(orgId: string, key: string): Promise<boolean> {
    const path = this.pathOf(orgId, key);
    try {
      await unlink(path);
    } catch (err) {
      if (ABSENT.has(errnoOf(err) ?? '') || errnoOf(err) === 'EPERM') return false;
      throw err;
    }
    await syncDirectory(dirname(path));
    return true;
  }

  async list(orgId: string, prefix = ''): Promise<ObjectInfo[]> {
    const orgDir = join(this.root, assertOrgId(orgId));
    const segments = assertKeyPrefix(prefix);
    const partial = segments.at(-1) ?? '';
    const start = join(orgDir, ...segments.slice(0, -1));
    const found: ObjectInfo[] = [];

    const walk = async (dir: string, filter: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (ABSENT.has(errnoOf(err) ?? '')) return;
        throw err;
      }
      for (const entry of entries) {
        if (!entry.name.startsWith(filter) || entry.name.startsWith(TEMP_PREFIX)) continue;
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path, '');
        else if (entry.isFile()) {
          // A file deleted between readdir and stat is simply no longer listed.
          const s = await stat(path).catch(() => null);
          if (s)
            found.push({
              key: relative(orgDir, path).split(sep).join('/'),
              size: s.size,
              modifiedAt: s.mtime,
            });
        }
      }
    };

    await walk(start, partial);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async health(): Promise<ObjectStoreHealth> {
    try {
      await mkdir(this.root, { recursive: true });
      await access(this.root, constants.R_OK | constants.W_OK);
      return { ok: true, adapter: 'fs' };
    } catch (err) {
      return { ok: false, adapter: 'fs', error: err instanceof Error ? err.message : String(err) };
    }
  }

  private pathOf(orgId: string, key: string): string {
    const orgDir = join(this.root, assertOrgId(orgId));
    const path = join(orgDir, ...assertObjectKey(key));
    // The key rules already exclude traversal; this guards the rules themselves.
    if (!path.startsWith(orgDir + sep))
      throw new ObjectStoreError('invalid_key', `key ${key} leaves ${orgId}`);
    return path;
  }

  /** fsyncs every directory mkdir created, and the one holding the first of them. */
  private async syncCreated(firstCreated: string, deepest: string): Promise<void> {
    let dir = deepest;
    while (dir.length >= firstCreated.length) {
      await syncDirectory(dir);
      if (dir === firstCreated) break;
      dir = dirname(dir);
    }
    await syncDirectory(dirname(firstCreated));
  }

  private notFoundOr(err: unknown, orgId: string, key: string): unknown {
    return ABSENT.has(errnoOf(err) ?? '') ? new ObjectNotFoundError(orgId, key) : err;
  }

  /** A key whose parent is an object, or which names a directory of other keys. */
  private conflictOr(err: unknown, orgId: string, key: string): unknown {
    const code = errnoOf(err);
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY') {
      return new ObjectStoreError(
        'conflict',
        `key ${key} of ${orgId} collides with an existing object or prefix`,
        {
          cause: err,
        },
      );
    }
    return err;
  }
}
