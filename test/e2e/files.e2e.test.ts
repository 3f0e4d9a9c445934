import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newFileId } from '../../src/files/model.js';
import { blake3Hex } from '../../src/lib/blake3.js';
import { eventually, type GatewayEnv, startGatewayEnv } from '../helpers/gateway-env.js';
import { type ServeProcess, startServe } from '../helpers/svc-process.js';

// SPEC 4.1 /v1/files through running `svc serve` processes with the real OpenAI SDK: upload (from a
// Buffer and from a file stream), list with its cursor, retrieve, content byte for byte, delete;
// the size cap; validation errors naming the parameter; isolation between projects and between
// organizations; read-your-writes across two gateway processes on one database.

type ApiError = InstanceType<typeof OpenAI.APIError>;
interface Key {
  org_id: string;
  project_id: string;
  api_key: string;
}

/** 64 KiB: the cap of the second gateway process. */
const SMALL_CAP = 64 * 1024;

let gw: GatewayEnv;
/** A second process (gateway role only) on the same database, its object store on the same volume. */
let peer: ServeProcess;
let peerDir: string;
let scratch: string;
let a: Key; // the main project
let b: Key; // another project of the same organization
let c: Key; // a project of another organization
let listing: Key; // a project used only by the list tests

const clientOf = (key: Key, url = gw.serve.httpUrl) =>
  new OpenAI({ apiKey: key.api_key, baseURL: `${url}/v1`, maxRetries: 0 });
const failure = async (call: () => Promise<unknown>): Promise<ApiError> => {
  try {
    await call();
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the call succeeded');
};
const raw = (key: Key, path: string, init: RequestInit = {}, url = gw.serve.httpUrl) =>
  fetch(`${url}/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key.api_key}`, ...(init.headers ?? {}) },
  });
const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { type: string; code: string; message: string; param: string | null } })
    .error;

const rowsOf = async (projectId: string) =>
  (
    await gw.db.pool.query<{ id: string; status: string; bytes: number; blake3: string | null }>(
      'SELECT id, status, bytes, blake3 FROM files WHERE project_id = $1 ORDER BY id',
      [projectId],
    )
  ).rows;
/** What the object store holds for a project: the names in its directory, temporary files included. */
const objectsOf = async (key: Key): Promise<string[]> =>
  (
    await readdir(join(gw.env.SVC_DATA_DIR!, 'objects', key.org_id, 'files', key.project_id)).catch(
      () => [] as string[],
    )
  ).sort();
const contentOf = async (client: OpenAI, id: string) =>
  Buffer.from(await (await client.files.content(id)).arrayBuffer());

const bootstrap = async (workspace: string, org: string, project: string): Promise<Key> =>
  (await gw.svc([
    'bootstrap',
    '--workspace',
    workspace,
    '--org',
    org,
    '--project',
    project,
  ])) as unknown as Key;
const live = async (key: Key, url: string) =>
  eventually(
    async () => (await raw(key, '/files', {}, url)).status === 200,
    15_000,
    'the API key in the gateway',
  );

/** Every byte value, `times` times over. */
const everyByte = (times: number) =>
  Buffer.concat(Array.from({ length: times }, () => Buffer.from(Array.from({ length: 256 }, (_, i) => i))));

beforeAll(async () => {
  gw = await startGatewayEnv({ SVC_LOG_LEVEL: 'error' });
  a = gw.boot;
  b = await bootstrap('Gw', 'Gw Org', 'Files B');
  c = await bootstrap('Files Other Ws', 'Files Other Org', 'Files C');
  listing = await bootstrap('Gw', 'Gw Org', 'Files Listing');
  expect(b.org_id).toBe(a.org_id);
  expect(b.project_id).not.toBe(a.project_id);
  expect(c.org_id).not.toBe(a.org_id);
  // Two gateways must not share a data dir (spool, journal); their object stores may share a volume.
  peerDir = await mkdtemp(join(tmpdir(), 'svc-files-peer-'));
  await chmod(peerDir, 0o755);
  await symlink(join(gw.env.SVC_DATA_DIR!, 'objects'), join(peerDir, 'objects'));
  peer = await startServe(
    { ...gw.env, SVC_DATA_DIR: peerDir, SVC_FILES_MAX_BYTES: String(SMALL_CAP), SVC_LOG_LEVEL: 'error' },
    ['--roles', 'gateway'],
  );
  scratch = await mkdtemp(join(tmpdir(), 'svc-files-src-'));
  for (const key of [a, b, c, listing]) await live(key, gw.serve.httpUrl);
  await live(a, peer.httpUrl);
}, 180_000);
afterAll(async () => {
  await peer?.stop();
  await gw?.stop();
  if (peerDir) await rm(peerDir, { recursive: true, force: true });
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('upload, retrieve, content, delete', () => {
  it('a Buffer upload: the OpenAI file object, its exact bytes back, blake3 and size stored', async () => {
    const client = clientOf(a);
    const bytes = everyByte(40);
    const before = Math.floor(Date.now() / 1_000);
    const { data: file, response } = await client.files
      .create({ file: await toFile(bytes, 'every byte.bin'), purpose: 'user_data' })
      .withResponse();
    const after = Math.floor(Date.now() / 1_000);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-svc-request-id')).toMatch(/^req_/);
    expect(file).toEqual({
      id: expect.stringMatching(/^file-[0-9a-z]{26}$/),
      object: 'file',
      bytes: bytes.length,
      created_at: expect.any(Number),
      filename: 'every byte.bin',
      purpose: 'user_data',
      status: 'processed',
      expires_at: null,
      status_details: null,
    });
    expect(file.created_at).toBeGreaterThanOrEqual(before);
    expect(file.created_at).toBeLessThanOrEqual(after);

    expect(await client.files.retrieve(file.id)).toEqual(file);
    const content = await client.files.content(file.id);
    expect(content.headers.get('content-type')).toBe('application/octet-stream');
    expect(content.headers.get('content-length')).toBe(String(bytes.length));
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);

    const [row] = (await rowsOf(a.project_id)).filter((r) => r.id === file.id);
    expect(row).toEqual({ id: file.id, status: 'processed', bytes: bytes.length, blake3: blake3Hex(bytes) });
    const onDisk = await readFile(
      join(gw.env.SVC_DATA_DIR!, 'objects', a.org_id, 'files', a.project_id, file.id),
    );
    expect(onDisk.equals(bytes)).toBe(true);
  });

  it('a multi-MB upload streamed from a file, and an empty file', async () => {
    const client = clientOf(a);
    const bytes = Buffer.concat([randomBytes(5 * 1024 * 1024 + 3), everyByte(1)]);
    const path = join(scratch, 'big.jsonl');
    await writeFile(path, bytes);
    // A read stream goes out as a streamed multipart body (no content-length).
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    expect(file).toMatchObject({ bytes: bytes.length, filename: 'big.jsonl', purpose: 'batch' });
    expect((await contentOf(client, file.id)).equals(bytes)).toBe(true);
    const [row] = (await rowsOf(a.project_id)).filter((r) => r.id === file.id);
    expect(row).toMatchObject({ bytes: bytes.length, blake3: blake3Hex(bytes) });

    const empty = await client.files.create({
      file: await toFile(Buffer.alloc(0), 'empty.txt'),
      purpose: 'assistants',
    });
    expect(empty.bytes).toBe(0);
    expect((await contentOf(client, empty.id)).length).toBe(0);
  });

  it('expires_after sets expires_at from created_at', async () => {
    const file = await clientOf(a).files.create({
      file: await toFile(Buffer.from('{"a":1}\n'), 'x.jsonl'),
      purpose: 'batch',
      expires_after: { anchor: 'created_at', seconds: 3_600 },
    });
    expect(file.expires_at).toBe(file.created_at + 3_600);
    expect((await clientOf(a).files.retrieve(file.id)).expires_at).toBe(file.created_at + 3_600);
  });

  it('delete: the deleted object, then 404 everywhere, its row and its bytes gone', async () => {
    const client = clientOf(a);
    const file = await client.files.create({
      file: await toFile(Buffer.from('bye'), 'bye.txt'),
      purpose: 'evals',
    });
    expect(await objectsOf(a)).toContain(file.id);
    expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    for (const call of [
      () => client.files.retrieve(file.id),
      () => client.files.content(file.id),
      () => client.files.delete(file.id),
    ]) {
      const err = await failure(call);
      expect(err.status).toBe(404);
      expect(err.error).toMatchObject({ type: 'not_found_error', code: 'not_found' });
    }
    const ids: string[] = [];
    for await (const f of client.files.list()) ids.push(f.id);
    expect(ids).not.toContain(file.id);
    expect((await rowsOf(a.project_id)).map((r) => r.id)).not.toContain(file.id);
    expect(await objectsOf(a)).not.toContain(file.id);
  });
});

describe('refusals', () => {
  const form = (parts: [string, string | Blob, string?][]) => {
    const f = new FormData();
    for (const [name, value, filename] of parts)
      if (typeof value === 'string') f.append(name, value);
      else f.append(name, value, filename);
    return f;
  };

  it('a bad or missing purpose, a missing file, other bodies: 400 naming the parameter, nothing stored', async () => {
    const client = clientOf(a);
    const rows = await rowsOf(a.project_id);
    const objects = await objectsOf(a);

    const bad = await failure(async () =>
      client.files.create({
        file: await toFile(everyByte(8), 'x.bin'),
        purpose: 'fine-tune-results' as 'batch',
      }),
    );
    expect(bad.status).toBe(400);
    expect(bad.error).toMatchObject({ type: 'invalid_request_error', param: 'purpose' });
    expect(bad.message).toMatch(
      /purpose must be one of assistants, batch, fine-tune, vision, user_data, evals/,
    );

    const cases: [FormData, string, RegExp][] = [
      [form([['file', new Blob([everyByte(4)]), 'x.bin']]), 'purpose', /missing required parameter purpose/],
      [form([['purpose', 'batch']]), 'file', /missing required parameter file/],
      [
        form([
          ['purpose', 'nope'],
          ['file', new Blob(['x']), 'x.txt'],
        ]),
        'purpose',
        /got "nope"/,
      ],
      [
        form([
          ['file', 'not a file'],
          ['purpose', 'batch'],
        ]),
        'file',
        /must be a file part/,
      ],
      [
        form([
          ['file', new Blob(['x']), 'x.txt'],
          ['purpose', 'batch'],
          ['color', 'red'],
        ]),
        'color',
        /unrecognized/,
      ],
      [
        form([
          ['document', new Blob(['x']), 'x.txt'],
          ['purpose', 'batch'],
        ]),
        'document',
        /field named file/,
      ],
      [
        form([
          ['file', new Blob(['x']), 'a.txt'],
          ['file', new Blob(['y']), 'b.txt'],
          ['purpose', 'batch'],
        ]),
        'file',
        /more than one file/,
      ],
      [
        form([
          ['file', new Blob(['x']), 'a.txt'],
          ['purpose', 'batch'],
          ['expires_after[seconds]', '60'],
        ]),
        'expires_after[seconds]',
        /from 3600/,
      ],
      [
        form([
          ['file', new Blob(['x']), 'a.txt'],
          ['purpose', 'batch'],
          ['expires_after[anchor]', 'created_at'],
        ]),
        'expires_after',
        /needs both/,
      ],
      // A part without a filename is a text field, whatever it holds.
      [
        form([
          ['file', new Blob(['x']), ''],
          ['purpose', 'batch'],
        ]),
        'file',
        /must be a file part/,
      ],
    ];
    for (const [body, param, message] of cases) {
      const res = await raw(a, '/files', { method: 'POST', body });
      expect(res.status, param).toBe(400);
      const error = await errorOf(res);
      expect(error, param).toMatchObject({ type: 'invalid_request_error', param });
      expect(error.message, param).toMatch(message);
    }
    const json = await raw(a, '/files', {
      method: 'POST',
      body: '{"purpose":"batch"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(json.status).toBe(415);
    expect((await errorOf(json)).message).toMatch(/multipart\/form-data/);
    expect(await rowsOf(a.project_id)).toEqual(rows);
    expect(await objectsOf(a)).toEqual(objects);
  });

  it('over SVC_FILES_MAX_BYTES: 413 with a clear message, no row and no object left; at the cap it is stored', async () => {
    const client = clientOf(a, peer.httpUrl);
    const rows = await rowsOf(a.project_id);
    const objects = await objectsOf(a);
    for (const file of [
      await toFile(Buffer.alloc(SMALL_CAP + 1, 7), 'big.bin'),
      await toFile(randomBytes(4 * SMALL_CAP), 'bigger.bin'),
    ]) {
      const err = await failure(() => client.files.create({ file, purpose: 'user_data' }));
      expect(err.status).toBe(413);
      expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'payload_too_large' });
      expect(err.message).toMatch(/larger than the 0\.06 MiB/);
    }
    // Streamed without a content-length, too.
    const path = join(scratch, 'over-cap.bin');
    await writeFile(path, randomBytes(SMALL_CAP + 10));
    expect(
      (await failure(() => client.files.create({ file: createReadStream(path), purpose: 'batch' }))).status,
    ).toBe(413);
    expect(await rowsOf(a.project_id)).toEqual(rows);
    expect(await objectsOf(a)).toEqual(objects);

    const exact = randomBytes(SMALL_CAP);
    const file = await client.files.create({ file: await toFile(exact, 'exact.bin'), purpose: 'user_data' });
    expect(file.bytes).toBe(SMALL_CAP);
    expect((await contentOf(client, file.id)).equals(exact)).toBe(true);
  });

  it('a client that goes away mid-upload leaves no row, object or temporary file', async () => {
    const rows = await rowsOf(a.project_id);
    const objects = await objectsOf(a);
    const url = new URL(`${gw.serve.httpUrl}/v1/files`);
    const boundary = 'cut-short-boundary';
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          authorization: `Bearer ${a.api_key}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(10 * 1024 * 1024),
        },
      });
      req.on('error', () => resolve());
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      );
      req.write(randomBytes(512 * 1024), () => {
        // The upload has begun once its row is reserved; then the client vanishes.
        void eventually(
          async () => (await rowsOf(a.project_id)).length > rows.length,
          10_000,
          'the upload',
        ).then(
          () => req.destroy(),
          () => req.destroy(),
        );
      });
    });
    await eventually(
      async () =>
        JSON.stringify(await rowsOf(a.project_id)) === JSON.stringify(rows) &&
        JSON.stringify(await objectsOf(a)) === JSON.stringify(objects),
      15_000,
      'the cut upload to be cleaned up',
    );
  });
});

describe('tenant isolation', () => {
  it("another project's or organization's key: 404 like an id that never existed, never listed, nothing deleted", async () => {
    const owner = clientOf(a);
    const bytes = everyByte(3);
    const file = await owner.files.create({ file: await toFile(bytes, 'secret.bin'), purpose: 'vision' });
    const invented = newFileId(Date.now());

    for (const key of [b, c]) {
      const other = clientOf(key);
      for (const [name, call] of [
        ['retrieve', (id: string) => other.files.retrieve(id)],
        ['content', (id: string) => other.files.content(id)],
        ['delete', (id: string) => other.files.delete(id)],
      ] as const) {
        const real = await failure(() => call(file.id));
        const never = await failure(() => call(invented));
        expect(real.status, name).toBe(404);
        // Same status, same envelope, same message but for the id itself.
        expect({ ...(real.error as object), message: real.message.replace(file.id, '<id>') }, name).toEqual({
          ...(never.error as object),
          message: never.message.replace(invented, '<id>'),
        });
      }
      const seen: string[] = [];
      for await (const f of other.files.list()) seen.push(f.id);
      expect(seen).not.toContain(file.id);
      const page = await other.files.list({ after: file.id, order: 'asc' });
      expect(page.data.map((f) => f.id)).not.toContain(file.id);
    }
    // Without a key, or with a wrong one: 401 before anything is looked up.
    for (const authorization of [undefined, 'Bearer svc_sk_not-a-key']) {
      const res = await fetch(`${gw.serve.httpUrl}/v1/files/${file.id}`, {
        headers: authorization ? { authorization } : {},
      });
      expect(res.status).toBe(401);
      expect((await errorOf(res)).type).toBe('authentication_error');
    }
    // Nothing the others did touched it.
    expect(await owner.files.retrieve(file.id)).toEqual(file);
    expect((await contentOf(owner, file.id)).equals(bytes)).toBe(true);
  });
});

describe('list', () => {
  const ids: string[] = [];
  const purposes = ['batch', 'user_data', 'batch', 'vision', 'batch', 'user_data', 'batch'] as const;

  beforeAll(async () => {
    const client = clientOf(listing);
    for (const [i, purpose] of purposes.entries()) {
      const f = await client.files.create({
        file: await toFile(Buffer.from(`file ${i}`), `f${i}.txt`),
        purpose,
      });
      ids.push(f.id);
    }
  });

  it('newest first by default, oldest first with order=asc, one page with no limit', async () => {
    const client = clientOf(listing);
    const page = await client.files.list();
    expect(page.data.map((f) => f.id)).toEqual(ids.toReversed());
    expect(page.has_more).toBe(false);
    const body = (await (await raw(listing, '/files')).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ object: 'list', first_id: ids.at(-1), last_id: ids[0], has_more: false });
    expect((await client.files.list({ order: 'asc' })).data.map((f) => f.id)).toEqual(ids);
    expect((await client.files.list({ purpose: 'batch', order: 'asc' })).data.map((f) => f.id)).toEqual(
      ids.filter((_, i) => purposes[i] === 'batch'),
    );
    expect((await client.files.list({ purpose: 'batch_output' })).data).toEqual([]);
  });

  it('pages with limit and after, has_more until the last page, and the SDK iterates them all', async () => {
    const client = clientOf(listing);
    for (const order of ['asc', 'desc'] as const) {
      const expected = order === 'asc' ? ids : ids.toReversed();
      const seen: string[] = [];
      let after: string | undefined;
      const more: boolean[] = [];
      for (;;) {
        const res = await raw(listing, `/files?limit=3&order=${order}${after ? `&after=${after}` : ''}`);
        const page = (await res.json()) as { data: { id: string }[]; has_more: boolean; last_id: string };
        seen.push(...page.data.map((f) => f.id));
        more.push(page.has_more);
        if (!page.has_more) break;
        after = page.last_id;
      }
      expect(seen).toEqual(expected);
      expect(more).toEqual([true, true, false]);

      const iterated: string[] = [];
      for await (const f of client.files.list({ limit: 2, order })) iterated.push(f.id);
      expect(iterated).toEqual(expected);
    }
    const exact = await client.files.list({ limit: ids.length });
    expect(exact.has_more).toBe(false);
    expect((await client.files.list({ limit: ids.length - 1 })).has_more).toBe(true);
  });

  it('after is a position: a deleted cursor or an id of another project pages on from where it stood', async () => {
    const client = clientOf(listing);
    // Another project's file, created after all of this project's.
    const foreign = await clientOf(a).files.create({
      file: await toFile(Buffer.from('x'), 'x'),
      purpose: 'batch',
    });
    const desc = await client.files.list({ after: foreign.id });
    expect(desc.data.map((f) => f.id)).toEqual(ids.toReversed());
    expect((await client.files.list({ after: foreign.id, order: 'asc' })).data).toEqual([]);
    // The answer for an id that never existed at the same instant is the same.
    const invented = `${foreign.id.slice(0, 15)}${'0'.repeat(16)}`;
    expect((await client.files.list({ after: invented })).data.map((f) => f.id)).toEqual(ids.toReversed());

    const temp = await client.files.create({ file: await toFile(Buffer.from('t'), 't'), purpose: 'batch' });
    const newer = await client.files.create({ file: await toFile(Buffer.from('n'), 'n'), purpose: 'batch' });
    await client.files.delete(temp.id);
    expect((await client.files.list({ after: temp.id, order: 'asc' })).data.map((f) => f.id)).toEqual([
      newer.id,
    ]);
    expect((await client.files.list({ after: temp.id })).data.map((f) => f.id)).toEqual(ids.toReversed());
    await client.files.delete(newer.id);
  });

  it('bad parameters are 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=10001', 'limit'],
      ['limit=2.5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['order=newest', 'order'],
      ['purpose=nope', 'purpose'],
      ['after=file-abc123', 'after'],
      ['after=', 'after'],
    ]) {
      const res = await raw(listing, `/files?${query}`);
      expect(res.status, query).toBe(400);
      expect(await errorOf(res), query).toMatchObject({ type: 'invalid_request_error', param });
    }
    expect((await raw(listing, '/files?limit=10000&order=asc')).status).toBe(200);
  });
});

describe('several gateway processes on one database', () => {
  it('what one process stored, the other lists, retrieves, serves and deletes at once', async () => {
    const here = clientOf(a);
    const there = clientOf(a, peer.httpUrl);
    const bytes = everyByte(12);
    const up = await there.files.create({ file: await toFile(bytes, 'peer.bin'), purpose: 'user_data' });
    expect(await here.files.retrieve(up.id)).toEqual(up);
    expect((await here.files.list({ limit: 1 })).data[0]?.id).toBe(up.id);
    expect((await contentOf(here, up.id)).equals(bytes)).toBe(true);
    expect(await here.files.delete(up.id)).toMatchObject({ deleted: true });
    expect((await failure(() => there.files.retrieve(up.id))).status).toBe(404);
    expect((await failure(() => there.files.content(up.id))).status).toBe(404);

    const down = await here.files.create({ file: await toFile(bytes, 'main.bin'), purpose: 'user_data' });
    expect((await contentOf(there, down.id)).equals(bytes)).toBe(true);
    expect(await there.files.delete(down.id)).toMatchObject({ deleted: true });
    expect((await failure(() => here.files.retrieve(down.id))).status).toBe(404);
  });
});
