import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { objectStoreContract } from '../../test/contract/objects.contract.js';
import { FsObjectStore, objectsPath } from './fs-store.js';
import { ObjectStoreError, TEMP_PREFIX } from './port.js';

/** Every file under `root`, as `/`-separated paths below it (temporary files included). */
const filesUnder = async (root: string): Promise<string[]> => {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
};

objectStoreContract('filesystem', async () => {
  const dirs: string[] = [];
  return {
    open: async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'svc-objects-'));
      dirs.push(dataDir);
      const root = objectsPath(dataDir);
      return { store: new FsObjectStore(root), leftovers: () => filesUnder(root) };
    },
    atomicUnderConcurrentWriters: true,
    cleanup: async () => {
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
});

describe('filesystem object store', () => {
  let dataDir: string;
  let store: FsObjectStore;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-objects-'));
    store = new FsObjectStore(objectsPath(dataDir));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('files an object at <data dir>/objects/<org>/<key>', async () => {
    await store.put('org_1', 'bodies/req_1.pack', 'x');
    expect(await readdir(join(dataDir, 'objects', 'org_1', 'bodies'))).toEqual(['req_1.pack']);
    expect(await store.health()).toEqual({ ok: true, adapter: 'fs' });
  });

  it('creates no directory for a refused key or organization', async () => {
    await expect(store.put('org_1', '../org_2/x', 'x')).rejects.toBeInstanceOf(ObjectStoreError);
    await expect(store.put('../org_2', 'x', 'x')).rejects.toBeInstanceOf(ObjectStoreError);
    await expect(store.list('org/1')).rejects.toBeInstanceOf(ObjectStoreError);
    expect(await readdir(dataDir)).toEqual([]);
  });

  it('refuses a key that collides with an object or with a prefix of other keys', async () => {
    await store.put('org_1', 'a', 'file');
    await expect(store.put('org_1', 'a/b', 'x')).rejects.toMatchObject({ code: 'conflict' });
    await store.put('org_1', 'dir/child', 'x');
    const err = await store.put('org_1', 'dir', 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ObjectStoreError);
    expect(err).toMatchObject({ code: 'conflict' });
    expect((await store.list('org_1')).map((o) => o.key)).toEqual(['a', 'dir/child']);
  });

  it('putStream writes each chunk before it asks the source for the next one: nothing is buffered', async () => {
    const dir = join(dataDir, 'objects', 'org_1', 'up');
    const chunk = Buffer.alloc(64 * 1024, 7);
    const onDisk: number[] = [];
    async function* source(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 8; i++) {
        if (i > 0) {
          const temp = (await readdir(dir)).find((n) => n.startsWith(TEMP_PREFIX));
          onDisk.push(temp ? (await stat(join(dir, temp))).size : -1);
        }
        yield chunk;
      }
    }
    await store.putStream('org_1', 'up/key', source());
    expect(onDisk).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => n * chunk.length));
    expect((await store.stat('org_1', 'up/key')).size).toBe(8 * chunk.length);
  });
});
