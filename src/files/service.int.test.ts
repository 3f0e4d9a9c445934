import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { blake3Hex } from '../lib/blake3.js';
import { ServiceError } from '../lib/errors.js';
import { FsObjectStore } from '../objects/fs-store.js';
import type { ObjectStore } from '../objects/port.js';
import type { FileScope } from './model.js';
import { Files, type UploadPart } from './service.js';
import { FileStore } from './store.js';

// The files service over a real table and the filesystem object store: what an upload stores and
// what a failed one leaves (nothing), content and delete against a concurrent change, the sweep.

let db: TestDatabase;
let dir: string;
let objects: FsObjectStore;
let files: Files;
const scope: FileScope = { orgId: 'org_a', projectId: 'prj_1', apiKeyId: 'key_1' };
const MAX = 1_000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE files');
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'svc-files-'));
  objects = new FsObjectStore(dir);
  files = new Files(new FileStore(db.pool), objects, { maxBytes: MAX });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A file part whose bytes arrive in `chunks`; `pulled` says how many were read. */
const filePart = (chunks: Buffer[], name = 'file', filename = 'data.bin') => {
  const state = { pulled: 0 };
  const part: UploadPart = {
    kind: 'file',
    name,
    filename,
    contentType: 'application/octet-stream',
    bytes: (async function* () {
      for (const c of chunks) {
        state.pulled++;
        yield c;
      }
    })(),
  };
  return { part, state };
};
const field = (name: string, value: string): UploadPart => ({ kind: 'field', name, value });
async function* formOf(...parts: UploadPart[]): AsyncGenerator<UploadPart> {
  yield* parts;
}
const stored = async () => ({
  rows: (await db.pool.query('SELECT id, status FROM files')).rows,
  objects: await readdir(join(dir, scope.orgId, 'files', scope.projectId)).catch(() => []),
});
const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
};

describe('upload', () => {
  it('stores the bytes with their count and blake3, whichever order the fields come in', async () => {
    const chunks = [Buffer.from('hello '), Buffer.alloc(0), Buffer.from('world')];
    for (const order of ['file first', 'purpose first']) {
      const { part } = filePart(chunks);
      const parts =
        order === 'file first' ? [part, field('purpose', 'batch')] : [field('purpose', 'batch'), part];
      const file = await files.upload(scope, formOf(...parts));
      expect(file).toMatchObject({ bytes: 11, filename: 'data.bin', purpose: 'batch', status: 'processed' });
      const row = (
        await db.pool.query('SELECT bytes, blake3, status, object_key, api_key_id FROM files WHERE id = $1', [
          file.id,
        ])
      ).rows[0];
      expect(row).toEqual({
        bytes: 11,
        blake3: blake3Hex(Buffer.from('hello world')),
        status: 'processed',
        object_key: `files/prj_1/${file.id}`,
        api_key_id: 'key_1',
      });
      expect((await objects.get('org_a', `files/prj_1/${file.id}`)).toString()).toBe('hello world');
    }
  });

  it('a purpose refused before the file arrives: no byte is read or stored', async () => {
    const { part, state } = filePart([Buffer.from('x')]);
    const err = await refusal(files.upload(scope, formOf(field('purpose', 'nope'), part)));
    expect(err).toMatchObject({ status: 400, param: 'purpose' });
    expect(state.pulled).toBe(0);
    expect(await stored()).toEqual({ rows: [], objects: [] });
  });

  it('a form found invalid after its file: the object and the row are removed', async () => {
    for (const [parts, param] of [
      [[filePart([Buffer.from('abc')]).part], 'purpose'],
      [[filePart([Buffer.from('abc')]).part, field('purpose', 'fine-tune-results')], 'purpose'],
      [
        [
          filePart([Buffer.from('abc')]).part,
          field('purpose', 'batch'),
          field('expires_after[seconds]', '4000'),
        ],
        'expires_after',
      ],
      [
        [filePart([Buffer.from('abc')]).part, filePart([Buffer.from('d')]).part, field('purpose', 'batch')],
        'file',
      ],
      [[field('purpose', 'batch')], 'file'],
      [[filePart([Buffer.from('abc')], 'attachment').part, field('purpose', 'batch')], 'attachment'],
      [[filePart([Buffer.from('abc')], 'file', 'bad\u0000name').part, field('purpose', 'batch')], 'file'],
    ] as const) {
      const err = await refusal(files.upload(scope, formOf(...parts)));
      expect(err.status, param).toBe(400);
      expect(err.param, param).toBe(param);
      expect(await stored(), param).toEqual({ rows: [], objects: [] });
    }
  });

  it('a file over maxBytes is a 413 mid-stream: the rest is not read, nothing is left', async () => {
    const { part, state } = filePart([
      Buffer.alloc(600),
      Buffer.alloc(600),
      Buffer.alloc(600),
      Buffer.alloc(600),
    ]);
    const err = await refusal(files.upload(scope, formOf(part, field('purpose', 'batch'))));
    expect(err).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(err.message).toMatch(/larger than the 1000 bytes this gateway accepts per file/);
    expect(state.pulled).toBe(2);
    expect(await stored()).toEqual({ rows: [], objects: [] });
    // Exactly at the cap is fine.
    const exact = await files.upload(
      scope,
      formOf(filePart([Buffer.alloc(MAX, 1)]).part, field('purpose', 'batch')),
    );
    expect(exact.bytes).toBe(MAX);
  });

  it('a part that fails mid-stream (the client went away): its error, nothing left', async () => {
    const gone = new ServiceError(
      'invalid_request_error',
      'the request body ended before the multipart form did',
    );
    const part: UploadPart = {
      kind: 'file',
      name: 'file',
      filename: 'cut.bin',
      contentType: 'application/octet-stream',
      bytes: (async function* () {
        yield Buffer.alloc(100);
        throw gone;
      })(),
    };
    expect(await refusal(files.upload(scope, formOf(part)))).toBe(gone);
    expect(await stored()).toEqual({ rows: [], objects: [] });
  });
});

describe('content and delete', () => {
  const upload = async (text: string) =>
    files.upload(scope, formOf(filePart([Buffer.from(text)]).part, field('purpose', 'user_data')));
  const read = async (id: string) => {
    const { stream, size } = await files.content(scope, id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return { size, text: Buffer.concat(chunks).toString() };
  };

  it('content streams the bytes; a file deleted meanwhile is 404; bytes missing under a live record is a 500', async () => {
    const f = await upload('some bytes');
    expect(await read(f.id)).toEqual({ size: 10, text: 'some bytes' });

    // Its object vanishes and its row goes with it (a delete on another process): 404.
    await db.pool.query(`UPDATE files SET status = 'deleting' WHERE id = $1`, [f.id]);
    expect((await refusal(files.content(scope, f.id))).status).toBe(404);

    const g = await upload('other bytes');
    await objects.delete(scope.orgId, `files/${scope.projectId}/${g.id}`);
    const err = await refusal(files.content(scope, g.id));
    expect(err.status).toBe(500);
    expect(err.message).toMatch(/missing from the object store/);
  });

  it('delete removes the object and the row; a failed object removal is finished by the sweep', async () => {
    const f = await upload('to delete');
    expect(await files.delete(scope, f.id)).toEqual({ id: f.id, object: 'file', deleted: true });
    expect(await stored()).toEqual({ rows: [], objects: [] });
    expect((await refusal(files.delete(scope, f.id))).status).toBe(404);

    const g = await upload('stuck');
    const problems: string[] = [];
    let broken = true;
    const flaky: ObjectStore = Object.create(objects, {
      delete: {
        value: (orgId: string, key: string) =>
          broken ? Promise.reject(new Error('EIO')) : objects.delete(orgId, key),
      },
    });
    const service = new Files(new FileStore(db.pool), flaky, {
      maxBytes: MAX,
      onError: (_err, what) => problems.push(what),
    });
    expect(await service.delete(scope, g.id)).toMatchObject({ deleted: true });
    expect(problems).toEqual([expect.stringMatching(/removed by the sweep/)]);
    // Gone for the API at once, still stored until the sweep.
    expect((await refusal(service.retrieve(scope, g.id))).status).toBe(404);
    expect(await stored()).toEqual({ rows: [{ id: g.id, status: 'deleting' }], objects: [g.id] });
    expect(await service.sweep()).toEqual({ retired: 0, removed: 0 });
    broken = false;
    expect(await service.sweep()).toEqual({ retired: 0, removed: 1 });
    expect(await stored()).toEqual({ rows: [], objects: [] });
  });

  it('the sweep removes expired files and uploads abandoned by a dead process', async () => {
    const expired = await upload('old');
    await db.pool.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      expired.id,
    ]);
    const kept = await upload('kept');
    // An upload whose process died a day ago: its row and its bytes were left behind.
    const abandoned = 'file-00000000000000000000000000';
    await db.pool.query(
      `INSERT INTO files (id, org_id, project_id, api_key_id, status, filename, content_type, object_key, created_at)
       VALUES ($1, 'org_a', 'prj_1', 'key_1', 'uploading', 'x', 'text/plain', $2, now() - interval '25 hours')`,
      [abandoned, `files/prj_1/${abandoned}`],
    );
    await objects.put('org_a', `files/prj_1/${abandoned}`, 'partial');

    expect((await refusal(files.retrieve(scope, expired.id))).status).toBe(404);
    expect(await files.sweep()).toEqual({ retired: 2, removed: 2 });
    expect(await stored()).toEqual({ rows: [{ id: kept.id, status: 'processed' }], objects: [kept.id] });
    expect(await files.sweep()).toEqual({ retired: 0, removed: 0 });
  });
});
