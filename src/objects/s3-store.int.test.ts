import { createServer } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectStoreContract } from '../../test/contract/objects.contract.js';
import {
  startS3Server,
  TEST_S3_CREDENTIALS,
  TEST_S3_REGION,
  type TestS3Server,
} from '../../test/helpers/s3-server.js';
import { ObjectStoreError } from './port.js';
import { MIN_PART_SIZE, S3ObjectStore, type S3ObjectStoreOptions } from './s3-store.js';

// The S3 adapter against a real S3 API: s3rver behind a front that verifies every SigV4 signature
// (test/contract/objects.contract.ts), on free ports of 127.0.0.1 over a temporary directory.

const MiB = 1024 * 1024;
const SECRET = TEST_S3_CREDENTIALS.secretAccessKey;

const storeOn = (server: TestS3Server, options: Partial<S3ObjectStoreOptions> = {}) =>
  new S3ObjectStore({
    endpoint: server.endpoint,
    bucket: server.bucket,
    region: TEST_S3_REGION,
    ...TEST_S3_CREDENTIALS,
    ...options,
  });

let prefixes = 0;
objectStoreContract('S3 (s3rver)', async () => {
  const server = await startS3Server();
  return {
    open: async () => {
      const prefix = `contract-${++prefixes}`;
      // The smallest part S3 allows, so the contract's longer streams go up in several parts.
      const store = storeOn(server, { prefix, partSize: MIN_PART_SIZE });
      return { store, leftovers: () => server.keysOnDisk(`${prefix}/`) };
    },
    atomicUnderConcurrentWriters: false,
    cleanup: () => server.close(),
  };
});

describe('S3 object store', () => {
  let server: TestS3Server;
  beforeAll(async () => {
    // Pages of 10 keys: a listing of a few dozen keys takes several.
    server = await startS3Server({ listPageSize: 10 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('files <orgId>/<key> under the prefix in the bucket, or at its top without one', async () => {
    await storeOn(server, { prefix: '/tenants/svc/' }).put('org_1', 'a/b', 'x');
    await storeOn(server).put('org_1', 'a/b', 'y');
    expect(await server.keysOnDisk('tenants/')).toEqual(['svc/org_1/a/b']);
    expect(await server.keysOnDisk('org_1/')).toEqual(['a/b']);
    expect((await storeOn(server, { prefix: 'tenants/svc' }).get('org_1', 'a/b')).toString()).toBe('x');
    expect(() => storeOn(server, { prefix: 'a/../b' })).toThrow(/'\.\.' segment/);
    expect(() => storeOn(server, { partSize: MIN_PART_SIZE - 1 })).toThrow(/at least/);
  });

  it('sends a long stream in parts while the source still produces, and completes it as one object', async () => {
    const store = storeOn(server, { prefix: 'parts', partSize: MIN_PART_SIZE });
    const seen: string[][] = [];
    async function* source(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 12; i++) {
        seen.push(await server.keysOnDisk('parts/'));
        yield Buffer.alloc(MiB, i);
      }
    }
    const info = await store.putStream('org_1', 'big', source());
    expect(info.size).toBe(12 * MiB);
    // Nothing at the key until the end; an upload under way from the sixth MiB on.
    expect(seen[0]).toEqual([]);
    expect(seen[5]).toEqual([]);
    expect(seen[6]).toEqual(['(unfinished upload) org_1/big']);
    expect(seen[11]).toEqual(['(unfinished upload) org_1/big']);
    expect(await server.keysOnDisk('parts/')).toEqual(['org_1/big']);
    const back = await store.get('org_1', 'big');
    expect(back.length).toBe(12 * MiB);
    expect([0, 5, 6, 11].map((i) => back[i * MiB + 7])).toEqual([0, 5, 6, 11]);
  });

  it('aborts the multipart upload of a source that throws', async () => {
    const store = storeOn(server, { prefix: 'aborts', partSize: MIN_PART_SIZE });
    const before = server.aborted.length;
    const failure = new Error('upload cut');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield Buffer.alloc(MIN_PART_SIZE + 1, 1);
      throw failure;
    }
    await expect(store.putStream('org_1', 'cut', failing())).rejects.toBe(failure);
    expect(server.aborted.length).toBe(before + 1);
    expect(await server.keysOnDisk('aborts/')).toEqual([]);
  });

  it('pages through a listing with continuation tokens', async () => {
    const store = storeOn(server, { prefix: 'pages' });
    const keys = Array.from({ length: 25 }, (_, i) => `many/${String(i).padStart(2, '0')}`);
    await Promise.all(keys.map((k) => store.put('org_1', k, 'x')));
    await store.put('org_1', 'other', 'x');
    expect((await store.list('org_1', 'many/')).map((o) => o.key)).toEqual(keys);
    expect((await store.list('org_1')).map((o) => o.key)).toEqual([...keys, 'other']);
  });

  describe('signed URLs', () => {
    it('a presigned GET reads the bytes with no other credential, and nothing else does', async () => {
      const store = storeOn(server, { prefix: 'signed' });
      await store.put('org_1', 'traces/t 1/a+b', 'artifact bytes ☃');
      const before = Date.now();
      const signed = await store.signedGetUrl('org_1', 'traces/t 1/a+b', 60);
      const expiresAt = Date.parse(signed.expires_at);
      expect(expiresAt).toBeGreaterThan(before + 58_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
      expect(signed.url).toMatch(/[?&]X-Amz-Expires=60(&|$)/);
      expect(signed.url).not.toContain(SECRET);

      const ok = await fetch(signed.url);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe('artifact bytes ☃');

      // The bucket is private: the bare URL, a tampered signature, another key or a longer life fail.
      const url = new URL(signed.url);
      const tampered = (edit: (u: URL) => void) => {
        const u = new URL(url);
        edit(u);
        return u.toString();
      };
      const sig = url.searchParams.get('X-Amz-Signature')!;
      for (const refused of [
        `${url.origin}${url.pathname}`,
        tampered((u) =>
          u.searchParams.set('X-Amz-Signature', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`),
        ),
        tampered((u) => {
          u.pathname = u.pathname.replace('org_1', 'org_2');
        }),
        tampered((u) => u.searchParams.set('X-Amz-Expires', '3600')),
      ]) {
        const res = await fetch(refused);
        expect(res.status, refused).toBe(403);
        await res.arrayBuffer();
      }
    });

    it('stops working when it expires', async () => {
      const store = storeOn(server, { prefix: 'signed' });
      await store.put('org_1', 'short', 'brief');
      const signed = await store.signedGetUrl('org_1', 'short', 1);
      expect((await fetch(signed.url)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, Date.parse(signed.expires_at) - Date.now() + 1100));
      const late = await fetch(signed.url);
      expect(late.status).toBe(403);
      expect(await late.text()).toMatch(/expired/);
    });

    it('keeps to the key rules and to the lifetimes S3 accepts', async () => {
      const store = storeOn(server);
      await expect(store.signedGetUrl('org_1', '../org_2/x', 60)).rejects.toMatchObject({
        code: 'invalid_key',
      });
      for (const ttl of [0, -1, 1.5, 604_801])
        await expect(store.signedGetUrl('org_1', 'x', ttl), String(ttl)).rejects.toBeInstanceOf(RangeError);
      await expect(store.signedGetUrl('org_1', 'x', 604_800)).resolves.toMatchObject({
        url: expect.stringContaining('X-Amz-Expires=604800'),
      });
    });

    it('addresses the bucket by path or by virtual host', async () => {
      const options = {
        endpoint: 'https://s3.eu-west-1.example.com/base/',
        bucket: 'bkt',
        region: 'eu-west-1',
        prefix: 'p',
        ...TEST_S3_CREDENTIALS,
      };
      const byPath = await new S3ObjectStore(options).signedGetUrl('org_1', "a b/c'd", 60);
      expect(byPath.url).toMatch(
        /^https:\/\/s3\.eu-west-1\.example\.com\/base\/bkt\/p\/org_1\/a%20b\/c%27d\?/,
      );
      expect(byPath.url).toContain('X-Amz-Credential=svc-test-access-key%2F');
      expect(byPath.url).toContain('%2Feu-west-1%2Fs3%2Faws4_request');
      const virtual = await new S3ObjectStore({ ...options, addressing: 'virtual' }).signedGetUrl(
        'org_1',
        'k',
        60,
      );
      expect(virtual.url).toMatch(/^https:\/\/bkt\.s3\.eu-west-1\.example\.com\/base\/p\/org_1\/k\?/);
    });
  });

  describe('failures', () => {
    it('a refused credential is an ObjectStoreError naming the answer, never the secret', async () => {
      for (const [credentials, answer] of [
        [{ accessKeyId: 'unknown-key', secretAccessKey: SECRET }, '403 InvalidAccessKeyId'],
        [
          { accessKeyId: TEST_S3_CREDENTIALS.accessKeyId, secretAccessKey: `${SECRET}-wrong` },
          '403 SignatureDoesNotMatch',
        ],
      ] as const) {
        const store = storeOn(server, credentials);
        const err = await store.get('org_1', 'x').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ObjectStoreError);
        expect(err).toMatchObject({ code: 'unavailable' });
        expect((err as Error).message).toContain(answer);
        expect((err as Error).message).not.toContain(SECRET);
        await expect(store.put('org_1', 'x', 'y')).rejects.toMatchObject({ code: 'unavailable' });
        await expect(store.list('org_1')).rejects.toMatchObject({ code: 'unavailable' });
        await expect(store.stat('org_1', 'x')).rejects.toMatchObject({ code: 'unavailable' });
        const health = await store.health();
        expect(health).toMatchObject({ ok: false, adapter: 's3', error: expect.stringMatching(/403/) });
        expect(JSON.stringify(health)).not.toContain(SECRET);
      }
      const missingBucket = storeOn(server, { bucket: 'no-such-bucket' });
      expect(await missingBucket.health()).toMatchObject({ ok: false });
    });

    it('a store that does not answer is an ObjectStoreError, and health says so', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const store = storeOn(server, { endpoint: `http://127.0.0.1:${port}` });
      const err = await store.get('org_1', 'x').catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/no answer.*ECONNREFUSED/),
      });
      expect((err as Error).message).not.toContain(SECRET);
      expect(await store.health()).toMatchObject({ ok: false, adapter: 's3' });
    });

    it('checks the health of a store that hangs once at a time, within its bound (probes never pile up)', async () => {
      const sockets: Socket[] = [];
      const hanging = createNetServer((socket) => void sockets.push(socket));
      await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
      try {
        const endpoint = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
        const store = storeOn(server, { endpoint });
        const started = Date.now();
        const checks = await Promise.all(Array.from({ length: 10 }, () => store.health()));
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(checks.every((c) => !c.ok)).toBe(true);
        expect(sockets.length).toBe(1);
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => hanging.close(resolve));
      }
    });

    it('tries an idempotent call three times on 5xx, a POST once', async () => {
      const calls: string[] = [];
      const busy = createServer((req, res) => {
        calls.push(req.method ?? '');
        res.writeHead(503, { 'content-type': 'application/xml' });
        res.end('<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      });
      await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
      try {
        const endpoint = `http://127.0.0.1:${(busy.address() as AddressInfo).port}`;
        const store = storeOn(server, { endpoint, partSize: MIN_PART_SIZE });
        await expect(store.get('org_1', 'x')).rejects.toMatchObject({
          code: 'unavailable',
          message: expect.stringMatching(/503 SlowDown: Please reduce/),
        });
        expect(calls).toEqual(['GET', 'GET', 'GET']);
        calls.length = 0;
        async function* big(): AsyncGenerator<Uint8Array> {
          yield Buffer.alloc(MIN_PART_SIZE + 1);
        }
        await expect(store.putStream('org_1', 'x', big())).rejects.toMatchObject({ code: 'unavailable' });
        expect(calls).toEqual(['POST']);
      } finally {
        busy.closeAllConnections();
        await new Promise((resolve) => busy.close(resolve));
      }
    });

    it('shows no secret when inspected or serialized', () => {
      const store = storeOn(server);
      expect(inspect(store, { depth: 5, showHidden: true })).not.toContain(SECRET);
      expect(JSON.stringify(store)).not.toContain(SECRET);
    });
  });
});
