import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { newFileId } from '../files/model.js';
import { AttachJobs } from './jobs.js';
import { AUTO_CHUNKING, newVectorStoreId, type VectorStoreScope, vectorStoreIdTime } from './model.js';
import { type PageQuery, VectorStoreTables } from './store.js';

// The vector store tables (migration 0020) through their module: pages of stores and of a store's
// files in both orders and both cursor directions, what never shows (other projects and
// organizations, deleted stores, detached files), counts, re-attach, and the job claims.

let db: TestDatabase;
let tables: VectorStoreTables;
let jobs: AttachJobs;
const mine: VectorStoreScope = { orgId: 'org_a', projectId: 'prj_1', apiKeyId: 'key_1' };
const sibling: VectorStoreScope = { orgId: 'org_a', projectId: 'prj_2', apiKeyId: 'key_2' };
const stranger: VectorStoreScope = { orgId: 'org_b', projectId: 'prj_1', apiKeyId: 'key_3' };
const T0 = 1_700_000_000_000;

beforeAll(async () => {
  db = await createTestDatabase();
  tables = new VectorStoreTables(db.pool);
  jobs = new AttachJobs(db.pool);
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE vector_stores CASCADE');
});

const createStore = async (scope: VectorStoreScope, ms: number, name = 'store') => {
  const id = newVectorStoreId(ms);
  await tables.createStore({
    id,
    scope,
    name,
    description: null,
    embeddingModel: 'text-embedding-3-small',
    metadata: {},
    expiresAfterDays: null,
    createdAt: vectorStoreIdTime(id)!,
  });
  return id;
};
const attach = async (
  scope: VectorStoreScope,
  storeId: string,
  ms: number,
  fileId = newFileId(ms - 1_000),
) => {
  const r = await tables.attach({
    scope,
    vectorStoreId: storeId,
    fileId,
    filename: `${fileId}.txt`,
    attributes: {},
    chunking: AUTO_CHUNKING,
    createdAt: new Date(ms),
  });
  expect(r?.created).toBe(true);
  return fileId;
};
const q = (p: Partial<PageQuery> = {}): PageQuery => ({
  limit: 100,
  order: 'desc',
  after: null,
  before: null,
  ...p,
});
const at = (id: string) => ({ id, createdAt: vectorStoreIdTime(id)! });

describe('stores', () => {
  it('pages in both orders, forwards with after and backwards with before, and has_more says whether more follow', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await createStore(mine, T0 + i * 1_000));
    // Two stores in the same millisecond are ordered by id.
    ids.push(await createStore(mine, T0 + 6_000));
    ids.sort();
    await createStore(sibling, T0 + 500);
    await createStore(stranger, T0 + 500);

    const asc = await tables.listStores(mine, q({ order: 'asc' }));
    expect(asc.items.map((s) => s.id)).toEqual(ids);
    expect(asc.hasMore).toBe(false);
    const desc = await tables.listStores(mine, q());
    expect(desc.items.map((s) => s.id)).toEqual([...ids].reverse());

    // Walk forwards three at a time, in each order.
    for (const order of ['asc', 'desc'] as const) {
      const expected = order === 'asc' ? ids : [...ids].reverse();
      const seen: string[] = [];
      const more: boolean[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await tables.listStores(mine, q({ order, limit: 3, after: after ? at(after) : null }));
        seen.push(...page.items.map((s) => s.id));
        more.push(page.hasMore);
        if (!page.hasMore) break;
        after = page.items.at(-1)!.id;
      }
      expect(seen).toEqual(expected);
      expect(more).toEqual([true, true, false]);
    }

    // `before` is the nearest items before the cursor, still in the list's order.
    const before = await tables.listStores(mine, q({ order: 'asc', limit: 2, before: at(ids[5]!) }));
    expect(before.items.map((s) => s.id)).toEqual([ids[3], ids[4]]);
    expect(before.hasMore).toBe(true);
    const beforeDesc = await tables.listStores(mine, q({ limit: 2, before: at(ids[1]!) }));
    expect(beforeDesc.items.map((s) => s.id)).toEqual([ids[3], ids[2]]);
    const both = await tables.listStores(mine, q({ order: 'asc', after: at(ids[1]!), before: at(ids[4]!) }));
    expect(both.items.map((s) => s.id)).toEqual([ids[2], ids[3]]);
    // A cursor that is no store at all is still a position.
    const gone = await tables.listStores(mine, q({ order: 'asc', after: at(newVectorStoreId(T0 + 2_500)) }));
    expect(gone.items[0]!.id).toBe(ids[3]);
  });

  it('another project or organization never reads, changes or deletes a store', async () => {
    const id = await createStore(mine, T0);
    for (const other of [sibling, stranger]) {
      expect(await tables.getStore(other, id)).toBeNull();
      expect(await tables.updateStore(other, id, { name: 'x' })).toBe(false);
      expect(await tables.markStoreDeleting(other, id)).toBe(false);
      expect((await tables.listStores(other, q())).items).toEqual([]);
      expect(
        await tables.attach({
          scope: other,
          vectorStoreId: id,
          fileId: newFileId(T0),
          filename: 'f',
          attributes: {},
          chunking: AUTO_CHUNKING,
          createdAt: new Date(T0),
        }),
      ).toBeNull();
    }
    expect((await tables.getStore(mine, id))?.name).toBe('store');
  });

  it('counts files by status and usage of completed ones; a deleted store is gone at once', async () => {
    const id = await createStore(mine, T0);
    const [a, b, c] = [
      await attach(mine, id, T0 + 1),
      await attach(mine, id, T0 + 2),
      await attach(mine, id, T0 + 3),
    ];
    const claims = await jobs.claim(10, 60);
    expect(claims.map((cl) => cl.fileId).sort()).toEqual([a, b, c].sort());
    const byFile = new Map(claims.map((cl) => [cl.fileId, cl]));
    expect(await jobs.complete(byFile.get(a)!, { usageBytes: 100, chunkCount: 2, tokenCount: 20 })).toBe(
      true,
    );
    expect(await jobs.fail(byFile.get(b)!, 'invalid_file', 'not text')).toBe(true);
    const store = await tables.getStore(mine, id);
    expect(store?.fileCounts).toEqual({ in_progress: 1, completed: 1, failed: 1, cancelled: 0, total: 3 });
    expect(store?.usageBytes).toBe(100);
    expect(await tables.detach(mine, id, c)).toBe(byFile.get(c)!.generation);
    expect((await tables.getStore(mine, id))?.fileCounts.total).toBe(2);

    expect(await tables.markStoreDeleting(mine, id)).toBe(true);
    expect(await tables.markStoreDeleting(mine, id)).toBe(false);
    expect(await tables.getStore(mine, id)).toBeNull();
    expect(await tables.getFile(mine, id, a)).toBeNull();
    expect(await tables.deletingStores(10)).toEqual([
      { orgId: 'org_a', projectId: 'prj_1', vectorStoreId: id },
    ]);
    await tables.removeStores([id]);
    expect((await db.pool.query('SELECT 1 FROM vector_store_files')).rowCount).toBe(0);
  });
});

describe('files of a store', () => {
  it('pages by attach time with a status filter; a detached file stays a position for a cursor', async () => {
    const id = await createStore(mine, T0);
    const files: string[] = [];
    for (let i = 0; i < 5; i++) files.push(await attach(mine, id, T0 + 10 * (5 - i)));
    // Attach order is the reverse of upload order here: the list follows the attach.
    const byAttach = [...files].reverse();
    const fq = (p: Partial<PageQuery> & { status?: 'completed' | null } = {}) => ({
      ...q(p),
      status: p.status ?? null,
    });
    expect((await tables.listFiles(mine, id, fq({ order: 'asc' }))).items.map((f) => f.fileId)).toEqual(
      byAttach,
    );

    const [first] = await jobs.claim(1, 60);
    await jobs.complete(first!, { usageBytes: 5, chunkCount: 1, tokenCount: 1 });
    const completed = await tables.listFiles(mine, id, fq({ status: 'completed' }));
    expect(completed.items.map((f) => f.fileId)).toEqual([first!.fileId]);

    const cursor = byAttach[1]!;
    const position = await tables.filePosition(mine, id, cursor);
    await tables.detach(mine, id, cursor);
    expect(await tables.filePosition(mine, id, cursor)).toEqual(position);
    const page = await tables.listFiles(mine, id, fq({ order: 'asc', after: position }));
    expect(page.items.map((f) => f.fileId)).toEqual(byAttach.slice(2));
    expect((await tables.listFiles(mine, id, fq({ order: 'asc' }))).items).toHaveLength(4);
    expect(await tables.filePosition(sibling, id, byAttach[0]!)).toBeNull();
    expect((await tables.listFiles(sibling, id, fq())).items).toEqual([]);
  });

  it('attaching an attached file changes nothing; a detached one is attached again, from the start', async () => {
    const id = await createStore(mine, T0);
    const fileId = await attach(mine, id, T0 + 1);
    const again = await tables.attach({
      scope: mine,
      vectorStoreId: id,
      fileId,
      filename: 'other',
      attributes: { a: 1 },
      chunking: AUTO_CHUNKING,
      createdAt: new Date(T0 + 2),
    });
    expect(again?.created).toBe(false);
    expect(again?.file.filename).toBe(`${fileId}.txt`);
    const [claim] = await jobs.claim(1, 60);
    await jobs.complete(claim!, { usageBytes: 9, chunkCount: 1, tokenCount: 1 });
    await tables.detach(mine, id, fileId);
    const back = await tables.attach({
      scope: mine,
      vectorStoreId: id,
      fileId,
      filename: 'back.txt',
      attributes: { a: 2 },
      chunking: { maxChunkSizeTokens: 200, chunkOverlapTokens: 0 },
      createdAt: new Date(T0 + 3),
    });
    expect(back?.created).toBe(true);
    expect(back?.file).toMatchObject({
      status: 'in_progress',
      usageBytes: 0,
      generation: null,
      attributes: { a: 2 },
      filename: 'back.txt',
      createdAt: new Date(T0 + 3),
    });
  });
});

describe('attach jobs', () => {
  it('a claim is one process’s: others skip it until its lease runs out, then a new generation takes over', async () => {
    const id = await createStore(mine, T0);
    const fileId = await attach(mine, id, T0 + 1);
    const [first] = await jobs.claim(5, 60);
    expect(first).toMatchObject({
      fileId,
      attempts: 1,
      previousGeneration: null,
      embeddingModel: 'text-embedding-3-small',
    });
    expect(first!.generation).toMatch(/^\d{1,20}$/);
    expect(await jobs.claim(5, 60)).toEqual([]);
    expect(await jobs.renew(first!, 60)).toBe(true);

    // The lease runs out (its process died): the next claim is a new generation.
    await db.pool.query(`UPDATE vector_store_files SET lease_until = now() - interval '1 second'`);
    const [second] = await jobs.claim(5, 60);
    expect(second).toMatchObject({ fileId, attempts: 2, previousGeneration: first!.generation });
    expect(second!.generation).not.toBe(first!.generation);
    // The first claim changes nothing any more.
    expect(await jobs.renew(first!, 60)).toBe(false);
    expect(await jobs.complete(first!, { usageBytes: 1, chunkCount: 1, tokenCount: 1 })).toBe(false);
    expect(await jobs.fail(first!, 'server_error', 'x')).toBe(false);
    expect(await jobs.complete(second!, { usageBytes: 1, chunkCount: 1, tokenCount: 1 })).toBe(true);
    expect((await jobs.indexState(id, fileId)).live).toEqual({
      generation: second!.generation,
      attributes: {},
      chunkCount: 1,
      tokenCount: 1,
    });
  });

  it('a released claim is due again after its wait; a deleted store’s files are never claimed or completed', async () => {
    const id = await createStore(mine, T0);
    const fileId = await attach(mine, id, T0 + 1);
    const [claim] = await jobs.claim(1, 60);
    await jobs.release(claim!, 3_600, 'the index did not answer');
    expect(await jobs.claim(1, 60)).toEqual([]);
    await jobs.release(claim!, 0, 'stopping');
    const [again] = await jobs.claim(1, 60);
    expect(again).toMatchObject({ fileId, lastReason: 'stopping', previousGeneration: claim!.generation });

    await tables.markStoreDeleting(mine, id);
    expect(await jobs.renew(again!, 60)).toBe(false);
    expect(await jobs.complete(again!, { usageBytes: 1, chunkCount: 1, tokenCount: 1 })).toBe(false);
    await db.pool.query(`UPDATE vector_store_files SET lease_until = NULL`);
    expect(await jobs.claim(1, 60)).toEqual([]);
    expect((await jobs.indexState(id, fileId)).live).toBeNull();
  });
});
