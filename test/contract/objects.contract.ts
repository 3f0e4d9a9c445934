import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidObjectKeyError,
  ObjectNotFoundError,
  ObjectRangeError,
  type ObjectStore,
} from '../../src/objects/port.js';

/**
 * The object-store contract (src/objects/port.ts), run against every adapter so the filesystem
 * store and an S3-compatible bucket keep the same rules: organizations apart, the key rules, exact
 * ranges, whole replacement, nothing left by a failed stream, listing order and prefix.
 */

export interface OpenedStore {
  store: ObjectStore;
  /**
   * What the store's backing holds right now, read from the backing itself rather than through the
   * store: paths below the store's root (`<orgId>/<key>`), including whatever a write in flight or
   * a failed one could leave (a temporary file, an unfinished multipart upload).
   */
  leftovers(): Promise<string[]>;
}

export interface ObjectStoreFixture {
  /** A store over an empty backing of its own (a fresh directory, or a fresh prefix of a bucket). */
  open(): Promise<OpenedStore>;
  /**
   * Whether the backing server itself replaces an object atomically under concurrent writers. The
   * filesystem does (rename); AWS S3 and MinIO do, but s3rver, the S3 server the tests run, writes
   * a PUT into the object's file in place, so readers racing a writer can see it half written.
   */
  atomicUnderConcurrentWriters: boolean;
  /** Removes everything the run created. */
  cleanup(): Promise<void>;
}

const readAll = async (stream: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
};

async function* chunksOf(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

const MiB = 1024 * 1024;

export const objectStoreContract = (adapter: string, setup: () => Promise<ObjectStoreFixture>): void => {
  describe(`object store contract: ${adapter}`, () => {
    let fixture: ObjectStoreFixture;
    let store: ObjectStore;
    let leftovers: () => Promise<string[]>;

    beforeAll(async () => {
      fixture = await setup();
    });
    afterAll(async () => {
      await fixture?.cleanup();
    });
    beforeEach(async () => {
      ({ store, leftovers } = await fixture.open());
    });

    const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

    it('stores bytes under <org>/<key>, reads them back, and replaces them whole', async () => {
      const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
      expect(await store.put('org_1', 'bodies/req_1.pack', bytes)).toMatchObject({
        key: 'bodies/req_1.pack',
        size: 7,
      });
      expect(await store.get('org_1', 'bodies/req_1.pack')).toEqual(bytes);
      expect(await leftovers()).toEqual(['org_1/bodies/req_1.pack']);

      await store.put('org_1', 'bodies/req_1.pack', 'replaced ☃');
      expect((await store.get('org_1', 'bodies/req_1.pack')).toString('utf8')).toBe('replaced ☃');
      const info = await store.stat('org_1', 'bodies/req_1.pack');
      expect(info).toMatchObject({ key: 'bodies/req_1.pack', size: Buffer.byteLength('replaced ☃') });
      expect(Math.abs(info.modifiedAt.getTime() - Date.now())).toBeLessThan(60_000);
      expect(await store.health()).toEqual({ ok: true, adapter: store.adapter });
    });

    it('keeps organizations apart: the same key names two objects', async () => {
      await store.put('org_a', 'shared/name', 'a');
      await store.put('org_b', 'shared/name', 'b');
      expect((await store.get('org_a', 'shared/name')).toString()).toBe('a');
      expect((await store.get('org_b', 'shared/name')).toString()).toBe('b');
      expect((await store.list('org_a')).map((o) => o.key)).toEqual(['shared/name']);
      await expect(store.get('org_c', 'shared/name')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.delete('org_c', 'shared/name')).toBe(false);
      expect(await store.delete('org_a', 'shared/name')).toBe(true);
      expect((await store.get('org_b', 'shared/name')).toString()).toBe('b');
      // An organization id that is a prefix of another is not its parent.
      await store.put('org', 'x', 'short');
      expect((await store.list('org')).map((o) => o.key)).toEqual(['x']);
    });

    it('reads exact byte ranges, including at both edges, and refuses ranges past the end', async () => {
      await store.put('org_1', 'blob', allBytes);
      expect(await store.getRange('org_1', 'blob', 0, 256)).toEqual(allBytes);
      expect(await store.getRange('org_1', 'blob', 0, 1)).toEqual(Buffer.from([0]));
      expect(await store.getRange('org_1', 'blob', 255, 1)).toEqual(Buffer.from([255]));
      expect(await store.getRange('org_1', 'blob', 100, 28)).toEqual(allBytes.subarray(100, 128));
      expect(await store.getRange('org_1', 'blob', 256, 0)).toEqual(Buffer.alloc(0));

      for (const [offset, length] of [
        [255, 2],
        [256, 1],
        [257, 0],
        [0, 257],
        [1000, 10],
        [-1, 1],
        [0, -1],
        [1.5, 1],
        [0, Number.NaN],
      ] as const) {
        await expect(
          store.getRange('org_1', 'blob', offset, length),
          `${offset}+${length}`,
        ).rejects.toBeInstanceOf(ObjectRangeError);
      }
      await store.put('org_1', 'empty', '');
      expect(await store.getRange('org_1', 'empty', 0, 0)).toEqual(Buffer.alloc(0));
      await expect(store.getRange('org_1', 'empty', 0, 1)).rejects.toBeInstanceOf(ObjectRangeError);
    });

    it('answers a missing key with ObjectNotFoundError, and deleting it is a no-op', async () => {
      await store.put('org_1', 'a/file', 'x');
      for (const key of ['missing', 'a/missing', 'a', 'a/file/below']) {
        await expect(store.get('org_1', key), key).rejects.toBeInstanceOf(ObjectNotFoundError);
        await expect(store.getRange('org_1', key, 0, 0), key).rejects.toBeInstanceOf(ObjectNotFoundError);
        await expect(store.getRange('org_1', key, 0, 1), key).rejects.toBeInstanceOf(ObjectNotFoundError);
        await expect(store.stat('org_1', key), key).rejects.toMatchObject({ code: 'not_found' });
        expect(await store.delete('org_1', key), key).toBe(false);
      }
      expect(await store.delete('org_1', 'a/file')).toBe(true);
      expect(await store.delete('org_1', 'a/file')).toBe(false);
      await expect(store.get('org_1', 'a/file')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.list('org_1')).toEqual([]);
    });

    it('lists by plain string prefix, sorted, never another organization', async () => {
      const keys = [
        'bodies/2024/01/a',
        'bodies/2024/02/b',
        'bodies/2025/c',
        'bodies-old/d',
        'files/e',
        'files/e f+g%20(h)',
        'files/é',
        'files/Z',
      ];
      for (const key of keys.toReversed()) await store.put('org_1', key, key);
      await store.put('org_2', 'bodies/2024/01/other', 'x');
      await store.put('org_10', 'bodies/2024/01/other', 'x');

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
      expect(await keysOf('files/e')).toEqual(['files/e', 'files/e f+g%20(h)']);
      expect(await keysOf('nothing/here')).toEqual([]);
      expect(await store.list('org_empty')).toEqual([]);
      expect(await store.list('org_')).toEqual([]);
      expect((await store.list('org_1', 'files/'))[0]).toMatchObject({ key: 'files/Z', size: 7 });
      expect((await store.get('org_1', 'files/e f+g%20(h)')).toString()).toBe('files/e f+g%20(h)');
      expect((await store.get('org_1', 'files/é')).toString()).toBe('files/é');
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
        'x'.repeat(1025),
      ];
      for (const key of badKeys) {
        await expect(store.put('org_1', key, 'x'), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.get('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.getStream('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.getRange('org_1', key, 0, 1), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.stat('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.delete('org_1', key), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
      }
      for (const orgId of ['', '.', '..', '../org_2', 'org/1', 'org 1', 'org\\1', '-org']) {
        await expect(store.put(orgId, 'key', 'x'), orgId).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.get(orgId, 'key'), orgId).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.list(orgId), orgId).rejects.toBeInstanceOf(InvalidObjectKeyError);
      }
      for (const prefix of ['../', '/abs', 'a/../', 'a\\b', 'a//']) {
        await expect(store.list('org_1', prefix), prefix).rejects.toBeInstanceOf(InvalidObjectKeyError);
      }
      expect(await leftovers()).toEqual([]);
    });

    it('never shows a torn object while concurrent writers replace one key', async (context) => {
      if (!fixture.atomicUnderConcurrentWriters) context.skip();
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
          // Every byte equals the first: the object is one writer's payload, whole.
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
      expect(await leftovers()).toEqual(['org_1/hot/key']);
    });

    describe('putStream and getStream', () => {
      it('writes the chunks in order, whole, and reads them back as a stream', async () => {
        // Past two 5 MiB parts, so a store that uploads in parts sends several.
        const big = Buffer.alloc(11 * MiB + 17, 0xab);
        big.fill(0xcd, 5 * MiB, 6 * MiB);
        const info = await store.putStream(
          'org_1',
          'files/prj_1/file-a',
          chunksOf(allBytes, new Uint8Array(0), big, allBytes.subarray(0, 3)),
        );
        const expected = Buffer.concat([allBytes, big, allBytes.subarray(0, 3)]);
        expect(info).toMatchObject({ key: 'files/prj_1/file-a', size: expected.length });
        expect((await store.get('org_1', 'files/prj_1/file-a')).equals(expected)).toBe(true);
        expect((await store.stat('org_1', 'files/prj_1/file-a')).size).toBe(expected.length);
        const read = await store.getStream('org_1', 'files/prj_1/file-a');
        expect(read.size).toBe(expected.length);
        expect((await readAll(read.stream)).equals(expected)).toBe(true);
        const middle = 5 * MiB + 256 - 2;
        expect(await store.getRange('org_1', 'files/prj_1/file-a', middle, 4)).toEqual(
          expected.subarray(middle, middle + 4),
        );
        // One chunk of many parts; and a chunk buffer the source refills after yielding it.
        const reused = Buffer.alloc(64 * 1024);
        async function* refilling(): AsyncGenerator<Uint8Array> {
          for (let i = 0; i < 100; i++) {
            reused.fill(i);
            yield reused;
          }
        }
        await store.putStream('org_1', 'files/prj_1/reused', refilling());
        const back = await store.get('org_1', 'files/prj_1/reused');
        expect(back.length).toBe(100 * reused.length);
        expect(back[0]).toBe(0);
        expect(back[back.length - 1]).toBe(99);
        expect(back[50 * reused.length]).toBe(50);
        // An empty source is an empty object, not an error.
        expect(await store.putStream('org_1', 'files/prj_1/empty', chunksOf())).toMatchObject({ size: 0 });
        expect(await store.get('org_1', 'files/prj_1/empty')).toEqual(Buffer.alloc(0));
        expect(await leftovers()).toEqual([
          'org_1/files/prj_1/empty',
          'org_1/files/prj_1/file-a',
          'org_1/files/prj_1/reused',
        ]);
      });

      it('a source that fails leaves nothing at the key, nothing behind, and rethrows its error', async () => {
        const failure = new Error('client went away');
        async function* failing(): AsyncGenerator<Uint8Array> {
          yield allBytes;
          yield Buffer.alloc(200_000, 1);
          throw failure;
        }
        // Past one 5 MiB part: a store that uploads in parts has started an upload.
        async function* failingLate(): AsyncGenerator<Uint8Array> {
          for (let i = 0; i < 7; i++) yield Buffer.alloc(MiB, i);
          throw failure;
        }
        for (const source of [failing, failingLate]) {
          await expect(store.putStream('org_1', 'files/p/broken', source())).rejects.toBe(failure);
          await expect(store.stat('org_1', 'files/p/broken')).rejects.toBeInstanceOf(ObjectNotFoundError);
          expect(await leftovers(), source.name).toEqual([]);

          // Over an existing object, a failed replacement leaves the old bytes in place.
          await store.put('org_1', 'files/p/kept', 'old bytes');
          await expect(store.putStream('org_1', 'files/p/kept', source())).rejects.toBe(failure);
          expect((await store.get('org_1', 'files/p/kept')).toString()).toBe('old bytes');
          expect(await leftovers(), source.name).toEqual(['org_1/files/p/kept']);
          expect(await store.delete('org_1', 'files/p/kept')).toBe(true);
        }
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
        await expect(store.putStream('../org_2', 'x', watched())).rejects.toBeInstanceOf(
          InvalidObjectKeyError,
        );
        await expect(store.getStream('org_1', 'a/../b')).rejects.toBeInstanceOf(InvalidObjectKeyError);
        expect(pulled).toBe(false);
        expect(await leftovers()).toEqual([]);
      });

      it('getStream: absent keys and prefixes are not found; an open stream outlives a delete', async () => {
        await store.put('org_1', 'dir/child', allBytes);
        for (const key of ['missing', 'dir', 'dir/child/below'])
          await expect(store.getStream('org_1', key), key).rejects.toBeInstanceOf(ObjectNotFoundError);
        await expect(store.getStream('org_2', 'dir/child')).rejects.toBeInstanceOf(ObjectNotFoundError);

        const open = await store.getStream('org_1', 'dir/child');
        expect(open.size).toBe(256);
        expect(await store.delete('org_1', 'dir/child')).toBe(true);
        expect(await readAll(open.stream)).toEqual(allBytes);
        await expect(store.getStream('org_1', 'dir/child')).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });
  });
};
