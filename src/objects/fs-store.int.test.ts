import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsObjectStore, objectsPath } from './fs-store.js';
import {
  InvalidObjectKeyError,
  ObjectNotFoundError,
  ObjectRangeError,
  ObjectStoreError,
  TEMP_PREFIX,
} from './port.js';

const readAll = async (stream: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
};

async function* chunksOf(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

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

  it('stores bytes under <data dir>/objects/<org>/<key> and reads them back', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    expect(await store.put('org_1', 'bodies/req_1.pack', bytes)).toMatchObject({
      key: 'bodies/req_1.pack',
      size: 7,
    });
    expect(await store.get('org_1', 'bodies/req_1.pack')).toEqual(bytes);
    expect(await readdir(join(dataDir, 'objects', 'org_1', 'bodies'))).toEqual(['req_1.pack']);

    await store.put('org_1', 'bodies/req_1.pack', 'replaced ☃');
    expect((await store.get('org_1', 'bodies/req_1.pack')).toString('utf8')).toBe('replaced ☃');
    expect(await store.stat('org_1', 'bodies/req_1.pack')).toMatchObject({
      size: Buffer.byteLength('replaced ☃'),
    });
    expect(await store.health()).toEqual({ ok: true, adapter: 'fs' });
  });

  it('keeps organizations apart: the same key names two objects', async () => {
    await store.put('org_a', 'shared/name', 'a');
    await store.put('org_b', 'shared/name', 'b');
    expect((await store.get('org_a', 'shared/name')).toString()).toBe('a');
    expect((await store.get('org_b', 'shared/name')).toString()).toBe('b');
    expect((await store.list('org_a')).map((o) => o.key)).toEqual(['shared/name']);
  });

  it('reads exact byte ranges, including at both edges, and refuses ranges past the end', async () => {
    const data = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await store.put('org_1', 'blob', data);
    expect(await store.getRange('org_1', 'blob', 0, 256)).toEqual(data);
    expect(await store.getRange('org_1', 'blob', 0, 1)).toEqual(Buffer.from([0]));
    expect(await store.getRange('org_1', 'blob', 255, 1)).toEqual(Buffer.from([255]));
    expect(await store.getRange('org_1', 'blob', 100, 28)).toEqual(data.subarray(100, 128));
    expect(await store.getRange('org_1', 'blob', 256, 0)).toEqual(Buffer.alloc(0));

    for (const [offset, length] of [
      [255, 2],
      [256, 1],
      [257, 0],
      [0, 257],
      [-1, 1],
      [0, -1],
      [1.5, 1],
      [0, Number.NaN],
    ] as const) {
      await expect(store.getRange('org_1', 'blob', offset, length)).rejects.toBeInstanceOf(ObjectRangeError);
    }
  });

  it('answers a missing key with ObjectNotFoundError, and deleting it is a no-op', async () => {
    await store.put('org_1', 'a/file', 'x');
    for (const key of ['missing', 'a/missing', 'a', 'a/file/below']) {
      await expect(store.get('org_1', key)).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.getRange('org_1', key, 0, 0)).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.stat('org_1', key)).rejects.toMatchObject({ code: 'not_found' });
      expect(await store.delete('org_1', key)).toBe(false);
    }
    expect(await store.delete('org_1', 'a/file')).toBe(true);
    await expect(store.get('org_1', 'a/file')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await store.list('org_1')).toEqual([]);
  });

  it('lists by plain string prefix, sorted, never another organization or a write in flight', async () => {
    const keys = ['bodies/2024/01/a', 'bodies/2024/02/b', 'bodies/2025/c', 'bodies-old/d', 'files/e'];
    for (const key of keys.toReversed()) await store.put('org_1', key, key);
    await store.put('org_2', 'bodies/2024/01/other', 'x');

    const keysOf = async (prefix?: string) => (await store.list('org_1', prefix)).map((o) => o.key);
    expect(await keysOf()).toEqual([...keys].sort());
    expect(await keysOf('bodies/')).toEqual(['bodies/2024/01/a', 'bodies/2024/02/b', 'bodies/2025/c']);
    expect(await keysOf('bodies')).toEqual([
      'bodies-old/d',
      'bodies/2024/01/a',
      'bodies/2024/02/b',
      'bodies/2025/c',
    ]);
    expect(await keysOf('bodies/2024/0')).toEqual(['bodies/2024/01/a', 'bodies/2024/02/b']);
    expect(await keysOf('files/e')).toEqual(['files/e']);
    expect(await keysOf('nothing/here')).toEqual([]);
    expect(await store.list('org_empty')).toEqual([]);
    expect((await store.list('org_1', 'files/'))[0]).toMatchObject({ key: 'files/e', size: 7 });
  });

  it('refuses traversal, absolute paths, NUL, backslashes and malformed organization ids', async () => {
    const badKeys = [
      '../org_2/secret',
      'a/../../org_2/secret',
      '..',
      '.',
      'a/./b',
      '/etc/passwd',
      'a\\..\\b',
      'a\0b',
      '',
      'a//b',
      'a/',
      '.svc-tmp-0123',
    ];
    for (const key of badKeys) {
      await expect(store.put('org_1', key, 'x'), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
      await expect(store.get('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
      await expect(store.delete('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
    }
    for (const orgId of ['', '.', '..', '../org_2', 'org/1', 'org 1', 'org\\1', '-org']) {
      await expect(store.put(orgId, 'key', 'x'), orgId).rejects.toBeInstanceOf(InvalidObjectKeyError);
      await expect(store.list(orgId), orgId).rejects.toBeInstanceOf(InvalidObjectKeyError);
    }
    for (const prefix of ['../', '/abs', 'a/../', 'a\\b', 'a//']) {
      await expect(store.list('org_1', prefix), prefix).rejects.toBeInstanceOf(InvalidObjectKeyError);
    }
    // Nothing was written anywhere.
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

  it('never shows a torn object while concurrent writers replace one key', async () => {
    const size = 512 * 1024;
    const writers = 12;
    const rounds = 4;
    await store.put('org_1', 'hot/key', Buffer.alloc(size, 0));
    let writing = true;
    const seen = new Set<number>();
    const reader = async () => {
      while (writing) {
        const bytes = await store.get('org_1', 'hot/key');
        expect(bytes.length).toBe(size);
        const first = bytes[0] ?? -1;
        // Every byte equals the first: the file is one writer's payload, whole.
        expect(bytes.every((b) => b === first)).toBe(true);
        const tail = await store.getRange('org_1', 'hot/key', size - 4096, 4096);
        expect(tail.length).toBe(4096);
        seen.add(first);
      }
    };
    const readers = [reader(), reader()];
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let r = 0; r < rounds; r++) await store.put('org_1', 'hot/key', Buffer.alloc(size, w + 1));
      }),
    );
    writing = false;
    await Promise.all(readers);

    const final = await store.get('org_1', 'hot/key');
    expect(final.every((b) => b === final[0])).toBe(true);
    expect(final[0]).toBeGreaterThan(0);
    expect(seen.size).toBeGreaterThan(1);
    // No temporary file is left behind.
    expect(await readdir(join(dataDir, 'objects', 'org_1', 'hot'))).toEqual(['key']);
  });

  describe('putStream and getStream', () => {
    const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

    it('writes the chunks in order, whole, and reads them back as a stream', async () => {
      const big = Buffer.alloc(3 * 1024 * 1024 + 17, 0xab);
      const info = await store.putStream(
        'org_1',
        'files/prj_1/file-a',
        chunksOf(allBytes, new Uint8Array(0), big, allBytes.subarray(0, 3)),
      );
      const expected = Buffer.concat([allBytes, big, allBytes.subarray(0, 3)]);
      expect(info).toMatchObject({ key: 'files/prj_1/file-a', size: expected.length });
      expect((await store.get('org_1', 'files/prj_1/file-a')).equals(expected)).toBe(true);
      const read = await store.getStream('org_1', 'files/prj_1/file-a');
      expect(read.size).toBe(expected.length);
      expect((await readAll(read.stream)).equals(expected)).toBe(true);
      // An empty source is an empty object, not an error.
      expect(await store.putStream('org_1', 'files/prj_1/empty', chunksOf())).toMatchObject({ size: 0 });
      expect(await store.get('org_1', 'files/prj_1/empty')).toEqual(Buffer.alloc(0));
      expect((await readdir(join(dataDir, 'objects', 'org_1', 'files', 'prj_1'))).sort()).toEqual([
        'empty',
        'file-a',
      ]);
    });

    it('writes each chunk before it asks the source for the next one: nothing is buffered', async () => {
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

    it('a source that fails leaves nothing at the key and no temporary file, and rethrows its error', async () => {
      const failure = new Error('client went away');
      async function* failing(): AsyncGenerator<Uint8Array> {
        yield allBytes;
        yield Buffer.alloc(200_000, 1);
        throw failure;
      }
      await expect(store.putStream('org_1', 'files/p/broken', failing())).rejects.toBe(failure);
      await expect(store.stat('org_1', 'files/p/broken')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await readdir(join(dataDir, 'objects', 'org_1', 'files', 'p'))).toEqual([]);

      // Over an existing object, a failed replacement leaves the old bytes in place.
      await store.put('org_1', 'files/p/kept', 'old bytes');
      await expect(store.putStream('org_1', 'files/p/kept', failing())).rejects.toBe(failure);
      expect((await store.get('org_1', 'files/p/kept')).toString()).toBe('old bytes');
      expect(await readdir(join(dataDir, 'objects', 'org_1', 'files', 'p'))).toEqual(['kept']);
    });

    it('a reader sees the old object until the new one is complete, then the new one whole', async () => {
      await store.put('org_1', 'swap', 'old');
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let halfWritten!: () => void;
      const half = new Promise<void>((resolve) => {
        halfWritten = resolve;
      });
      async function* slow(): AsyncGenerator<Uint8Array> {
        yield Buffer.from('new ');
        halfWritten();
        await gate;
        yield Buffer.from('bytes');
      }
      const writing = store.putStream('org_1', 'swap', slow());
      await half;
      expect((await store.get('org_1', 'swap')).toString()).toBe('old');
      expect((await store.list('org_1')).map((o) => o.key)).toEqual(['swap']);
      release();
      await writing;
      expect((await store.get('org_1', 'swap')).toString()).toBe('new bytes');
    });

    it('refuses a bad key or organization before reading the source', async () => {
      let pulled = false;
      async function* watched(): AsyncGenerator<Uint8Array> {
        pulled = true;
        yield allBytes;
      }
      await expect(store.putStream('org_1', '../org_2/x', watched())).rejects.toBeInstanceOf(
        InvalidObjectKeyError,
      );
      await expect(store.putStream('../org_2', 'x', watched())).rejects.toBeInstanceOf(InvalidObjectKeyError);
      await expect(store.getStream('org_1', 'a/../b')).rejects.toBeInstanceOf(InvalidObjectKeyError);
      expect(pulled).toBe(false);
      expect(await readdir(dataDir)).toEqual([]);
    });

    it('getStream: absent keys and prefixes are not found; an open stream outlives a delete', async () => {
      await store.put('org_1', 'dir/child', allBytes);
      for (const key of ['missing', 'dir', 'dir/child/below'])
        await expect(store.getStream('org_1', key), key).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.getStream('org_2', 'dir/child')).rejects.toBeInstanceOf(ObjectNotFoundError);

      const open = await store.getStream('org_1', 'dir/child');
      expect(await store.delete('org_1', 'dir/child')).toBe(true);
      expect(await readAll(open.stream)).toEqual(allBytes);
      await expect(store.getStream('org_1', 'dir/child')).rejects.toBeInstanceOf(ObjectNotFoundError);
    });
  });
});
