import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { type FileScope, fileIdTime, newFileId, objectKeyOf, type Purpose } from './model.js';
import { FileStore, type ListQuery, listStatement } from './store.js';

// The files table (migration 0019) through its store: the list's order and cursor at their edges,
// what never shows (other projects and organizations, unfinished, deleted and expired files), and
// an index serving every shape of the list query.

let db: TestDatabase;
let store: FileStore;
const mine: FileScope = { orgId: 'org_a', projectId: 'prj_1', apiKeyId: 'key_1' };
const sibling: FileScope = { orgId: 'org_a', projectId: 'prj_2', apiKeyId: 'key_2' };
const stranger: FileScope = { orgId: 'org_b', projectId: 'prj_1', apiKeyId: 'key_3' };
const T0 = 1_700_000_000_000;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new FileStore(db.pool);
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE files');
});

/** A stored file created at `ms`. */
const put = async (scope: FileScope, ms: number, purpose: Purpose = 'batch', id = newFileId(ms)) => {
  await store.reserve({
    id,
    scope,
    filename: `${id}.txt`,
    contentType: 'text/plain',
    objectKey: objectKeyOf(scope.projectId, id),
    createdAt: new Date(ms),
  });
  const file = await store.finish(id, scope, { purpose, bytes: 3, blake3: 'a'.repeat(64), expiresAt: null });
  expect(file).not.toBeNull();
  return id;
};
const list = async (scope: FileScope, q: Partial<ListQuery> & { afterId?: string }) => {
  const { afterId, ...rest } = q;
  const after = afterId ? { id: afterId, createdAt: fileIdTime(afterId)! } : (rest.after ?? null);
  return store.list(scope, { purpose: null, limit: 100, order: 'desc', ...rest, after });
};
const ids = (page: { files: { id: string }[] }) => page.files.map((f) => f.id);

/** Pages through everything with `limit`, returning the ids in order and each page's has_more. */
const walk = async (scope: FileScope, q: Partial<ListQuery>, limit: number) => {
  const seen: string[] = [];
  const more: boolean[] = [];
  let afterId: string | undefined;
  for (;;) {
    const page = await list(scope, { ...q, limit, ...(afterId ? { afterId } : {}) });
    seen.push(...ids(page));
    more.push(page.hasMore);
    if (!page.hasMore) return { seen, more };
    afterId = page.files.at(-1)!.id;
  }
};

describe('list order and cursor', () => {
  it('orders by (created_at, id) both ways, ties within a millisecond broken by id, across pages', async () => {
    const made: string[] = [];
    // Five files in one millisecond, then one alone, then three sharing another millisecond.
    for (const ms of [T0, T0, T0, T0, T0, T0 + 1, T0 + 5, T0 + 5, T0 + 5]) made.push(await put(mine, ms));
    const asc = [...made].sort();
    expect(ids(await list(mine, { order: 'asc' }))).toEqual(asc);
    expect(ids(await list(mine, { order: 'desc' }))).toEqual(asc.toReversed());
    for (const limit of [1, 2, 3, 4, 8, 9, 10]) {
      const up = await walk(mine, { order: 'asc' }, limit);
      expect(up.seen, `asc by ${limit}`).toEqual(asc);
      expect(up.more.filter(Boolean)).toHaveLength(Math.ceil(asc.length / limit) - 1);
      const down = await walk(mine, { order: 'desc' }, limit);
      expect(down.seen, `desc by ${limit}`).toEqual(asc.toReversed());
    }
    // Exactly `limit` files left: has_more is false, not a last empty page.
    expect((await list(mine, { limit: 9 })).hasMore).toBe(false);
    expect((await list(mine, { limit: 8 })).hasMore).toBe(true);
  });

  it('a cursor is a position: before everything, past everything, gone, or never there', async () => {
    const made = [await put(mine, T0 + 10), await put(mine, T0 + 20), await put(mine, T0 + 30)];
    expect(ids(await list(mine, { afterId: newFileId(T0), order: 'asc' }))).toEqual(made);
    expect(ids(await list(mine, { afterId: newFileId(T0), order: 'desc' }))).toEqual([]);
    expect(ids(await list(mine, { afterId: newFileId(T0 + 99), order: 'desc' }))).toEqual(made.toReversed());
    expect(ids(await list(mine, { afterId: newFileId(T0 + 99), order: 'asc' }))).toEqual([]);
    // The middle file deleted: paging on from it still finds its neighbours.
    expect(await store.markDeleting(mine, made[1]!)).not.toBeNull();
    await store.remove([made[1]!]);
    expect(ids(await list(mine, { afterId: made[1]!, order: 'asc' }))).toEqual([made[2]]);
    expect(ids(await list(mine, { afterId: made[1]!, order: 'desc' }))).toEqual([made[0]]);
    // The last file itself as cursor: nothing after it.
    expect(await list(mine, { afterId: made[2]!, order: 'asc' })).toEqual({ files: [], hasMore: false });
  });

  it('filters by purpose, pages included', async () => {
    const batch: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = await put(mine, T0 + i, i % 2 === 0 ? 'batch' : 'vision');
      if (i % 2 === 0) batch.push(id);
    }
    expect((await walk(mine, { purpose: 'batch', order: 'asc' }, 2)).seen).toEqual(batch);
    expect((await walk(mine, { purpose: 'batch', order: 'desc' }, 3)).seen).toEqual(batch.toReversed());
    expect(ids(await list(mine, { purpose: 'evals' }))).toEqual([]);
  });
});

describe('what never shows', () => {
  it("other projects' and organizations' files, interleaved in time, nor by id", async () => {
    const own: string[] = [];
    const others: string[] = [];
    for (let i = 0; i < 12; i++) {
      const scope = [mine, sibling, stranger][i % 3]!;
      const id = await put(scope, T0 + i);
      (scope === mine ? own : others).push(id);
    }
    expect(ids(await list(mine, { order: 'asc' }))).toEqual(own);
    expect((await walk(mine, { order: 'asc' }, 1)).seen).toEqual(own);
    for (const id of others) {
      expect(await store.get(mine, id)).toBeNull();
      expect(await store.markDeleting(mine, id)).toBeNull();
      // Another's id as cursor pages through the caller's own files only.
      expect(ids(await list(mine, { afterId: id, order: 'asc' })).every((x) => own.includes(x))).toBe(true);
    }
    // The same id under the right scope is there; the wrong one never finished it.
    expect(await store.get(sibling, others[0]!)).not.toBeNull();
    expect(
      await store.finish(own[0]!, sibling, {
        purpose: 'batch',
        bytes: 1,
        blake3: 'a'.repeat(64),
        expiresAt: null,
      }),
    ).toBeNull();
  });

  it('uploads in flight, deleted and expired files', async () => {
    const shown = await put(mine, T0);
    const uploading = newFileId(T0 + 1);
    await store.reserve({
      id: uploading,
      scope: mine,
      filename: 'u',
      contentType: 'text/plain',
      objectKey: objectKeyOf(mine.projectId, uploading),
      createdAt: new Date(T0 + 1),
    });
    const deleting = await put(mine, T0 + 2);
    await store.markDeleting(mine, deleting);
    const expired = await put(mine, T0 + 3);
    await db.pool.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired]);
    const expiring = await put(mine, T0 + 4);
    await db.pool.query(`UPDATE files SET expires_at = now() + interval '1 hour' WHERE id = $1`, [expiring]);

    expect(ids(await list(mine, { order: 'asc' }))).toEqual([shown, expiring]);
    for (const id of [uploading, deleting, expired]) {
      expect(await store.get(mine, id), id).toBeNull();
      expect(await store.markDeleting(mine, id), id).toBeNull();
    }
    expect((await store.get(mine, expiring))?.expiresAt).toBeInstanceOf(Date);
    // A second delete finds nothing: the first one won.
    expect(await store.markDeleting(mine, shown)).not.toBeNull();
    expect(await store.markDeleting(mine, shown)).toBeNull();
  });

  it('retire: expired files and long-abandoned uploads, nothing else; then listed for removal', async () => {
    const fresh = await put(mine, Date.now());
    const expired = await put(mine, Date.now());
    await db.pool.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired]);
    const reserve = async (ms: number) => {
      const id = newFileId(ms);
      await store.reserve({
        id,
        scope: mine,
        filename: 'u',
        contentType: 'text/plain',
        objectKey: objectKeyOf(mine.projectId, id),
        createdAt: new Date(ms),
      });
      return id;
    };
    const abandoned = await reserve(Date.now() - 2 * 3_600_000);
    const inFlight = await reserve(Date.now());

    expect(await store.retire(3_600, 100)).toBe(2);
    expect(await store.retire(3_600, 100)).toBe(0);
    expect((await store.deleting(100)).map((r) => r.id).sort()).toEqual([expired, abandoned].sort());
    expect((await store.deleting(1)).length).toBe(1);
    await store.remove([expired, abandoned, fresh]);
    const left = await db.pool.query<{ id: string; status: string }>(
      'SELECT id, status FROM files ORDER BY id',
    );
    // remove touches only rows marked deleting.
    expect(left.rows).toEqual(
      [
        { id: fresh, status: 'processed' },
        { id: inFlight, status: 'uploading' },
      ].sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
  });
});

describe('the list query plan', () => {
  it('reads one project through its index: in order, no sort, for a large project; never a sequential scan', async () => {
    // One project of 12,000 files beside 39 small ones of 100.
    await db.pool.query(
      `INSERT INTO files (id, org_id, project_id, api_key_id, status, purpose, filename, content_type,
                          bytes, blake3, object_key, created_at)
       SELECT 'file-' || lpad(g::text, 26, '0'),
              CASE WHEN g <= 12000 THEN 'org_big' ELSE 'org_' || (g % 4) END,
              CASE WHEN g <= 12000 THEN 'prj_big' ELSE 'prj_' || (g % 39) END,
              'key', 'processed', (ARRAY['batch','vision','user_data'])[1 + g % 3], 'f', 'text/plain', 1,
              repeat('a', 64), 'k', to_timestamp(1700000000 + g)
         FROM generate_series(1, 15900) g`,
    );
    await db.pool.query('ANALYZE files');
    const cursor = { id: 'file-'.padEnd(31, '5'), createdAt: new Date(1_700_006_000_000) };
    for (const [scope, large] of [
      [{ orgId: 'org_big', projectId: 'prj_big' }, true],
      [{ orgId: 'org_1', projectId: 'prj_1' }, false],
    ] as const)
      for (const purpose of [null, 'batch'])
        for (const order of ['asc', 'desc'] as const)
          for (const after of [null, cursor]) {
            const { text, values } = listStatement(scope, { purpose, order, after, limit: 20 });
            const plan = JSON.stringify(
              (await db.pool.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, values))
                .rows[0],
            );
            const shape = JSON.stringify({ project: scope.projectId, purpose, order, after: after !== null });
            expect(plan, shape).toMatch(
              purpose ? /"Index Name":"files_list_by_purpose"/ : /"Index Name":"files_list"/,
            );
            expect(plan, shape).not.toContain('Seq Scan');
            if (!large) continue;
            // The index hands the rows over in list order: the first page costs a page, not the project.
            expect(plan, shape).not.toContain('"Node Type":"Sort"');
            expect(plan, shape).toContain(
              order === 'desc' ? '"Scan Direction":"Backward"' : '"Scan Direction":"Forward"',
            );
            if (after) expect(plan, shape).toMatch(/"Index Cond":"[^"]*created_at, id\) [<>] /);
          }
  });
});
