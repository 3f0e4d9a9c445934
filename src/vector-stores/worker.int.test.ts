import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  FakeEmbedder,
  gate,
  MemoryFiles,
  MemoryVectorIndex,
  memoryFilters,
  paragraphChunker,
  textExtractor,
  wordsVector,
} from '../../test/helpers/memory-vector-index.js';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/postgres.js';
import { newFileId } from '../files/model.js';
import type { ApiKeyIdentity } from '../gateway/auth/api-key-cache.js';
import { ServiceError } from '../lib/errors.js';
import { AttachJobs } from './jobs.js';
import type { VectorStoreScope } from './model.js';
import { parseAttach, parseCreateBatch, parseCreateStore, parseFileList, parseSearch } from './requests.js';
import { VectorStores } from './service.js';
import { VectorStoreTables } from './store.js';
import { AttachWorker, type AttachWorkerOptions } from './worker.js';

// The attach jobs and search over a real PostgreSQL and the in-memory index of
// test/helpers/memory-vector-index.ts: a file from its bytes to searchable chunks; a process that
// dies mid-attach (its lease runs out and another resumes under a new generation); a detach, a
// store deletion or a takeover in the middle of an attach leaving nothing visible; failures
// naming their cause; a stopping process giving its rows back.

let db: TestDatabase;
let tables: VectorStoreTables;
let jobs: AttachJobs;
let index: MemoryVectorIndex;
let files: MemoryFiles;
let embedder: FakeEmbedder;
let workers: AttachWorker[];
let service: VectorStores;
const revoked = new Set<string>();

const key: ApiKeyIdentity = {
  apiKeyId: 'key_1',
  projectId: 'prj_1',
  orgId: 'org_a',
  workspaceId: 'ws_1',
  name: 'k',
  prefix: 'sk-',
  tracing: false,
};
const scope: VectorStoreScope = { orgId: key.orgId, projectId: key.projectId, apiKeyId: key.apiKeyId };
const other: ApiKeyIdentity = { ...key, apiKeyId: 'key_2', projectId: 'prj_2' };

const newWorker = (options: AttachWorkerOptions = {}) => {
  const worker = new AttachWorker(
    jobs,
    {
      files,
      index,
      chunker: paragraphChunker,
      extractor: textExtractor,
      embedder,
      keys: (id) =>
        revoked.has(id) ? null : id === key.apiKeyId ? key : id === other.apiKeyId ? other : null,
    },
    { sweepMs: 3_600_000, ...options },
  );
  workers.push(worker);
  return worker;
};

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
  index = new MemoryVectorIndex();
  files = new MemoryFiles();
  embedder = new FakeEmbedder();
  workers = [];
  revoked.clear();
  service = new VectorStores(tables, jobs, {
    files,
    extractor: textExtractor,
    index,
    filters: memoryFilters,
    embedder,
    // Jobs run when the test drains a worker, not on their own.
    kick: () => {},
  });
});
afterEach(async () => {
  for (const w of workers) await w.stop();
});

const DOC =
  'Lighthouses guide ships along rocky coasts at night.\n\nBread rises when yeast ferments the dough.';
const NOTES = '# Notes\n\nThe orbit of Mars takes 687 days.\n\nTea leaves steep in hot water.';

/** A store with a file attached (not yet indexed). */
const storeWithFile = async (text = DOC, attributes: Record<string, string | number | boolean> = {}) => {
  const store = await service.create(scope, parseCreateStore({ name: 'docs' }));
  const fileId = newFileId(Date.now());
  files.put(scope, fileId, 'doc.txt', text);
  const attached = await service.attach(scope, store.id, parseAttach({ file_id: fileId, attributes }));
  expect(attached.status).toBe('in_progress');
  return { storeId: store.id, fileId };
};
const ref = (storeId: string) => ({ orgId: scope.orgId, projectId: scope.projectId, vectorStoreId: storeId });
const rowOf = async (storeId: string, fileId: string) =>
  (
    await db.pool.query<{
      status: string;
      generation: string | null;
      lease_until: Date | null;
      expired: boolean;
    }>(
      `SELECT status, generation, lease_until, lease_until <= now() AS expired FROM vector_store_files
        WHERE vector_store_id = $1 AND file_id = $2`,
      [storeId, fileId],
    )
  ).rows[0];

describe('an attach, from bytes to searchable chunks', () => {
  it('completes: chunks embedded in batches with the store’s model and the attaching key, usage in bytes of chunk text', async () => {
    const store = await service.create(
      scope,
      parseCreateStore({ embedding_model: 'text-embedding-3-large' }),
    );
    const fileId = newFileId(Date.now());
    files.put(scope, fileId, 'doc.txt', DOC);
    await service.attach(scope, store.id, parseAttach({ file_id: fileId }));
    expect((await service.retrieve(scope, store.id)).status).toBe('in_progress');
    await newWorker({ batchSize: 1 }).drain();

    const file = await service.retrieveFile(scope, store.id, fileId);
    const chunks = DOC.split('\n\n');
    expect(file).toMatchObject({ status: 'completed', last_error: null });
    expect(file.usage_bytes).toBe(chunks.reduce((n, c) => n + Buffer.byteLength(c), 0));
    expect(embedder.calls).toEqual(
      chunks.map((c) => ({ apiKeyId: 'key_1', model: 'text-embedding-3-large', inputs: [c] })),
    );
    expect(index.visible(ref(store.id)).map((c) => c.text)).toEqual(chunks);
    const after = await service.retrieve(scope, store.id);
    expect(after).toMatchObject({
      status: 'completed',
      usage_bytes: file.usage_bytes,
      file_counts: { in_progress: 0, completed: 1, failed: 0, cancelled: 0, total: 1 },
    });
  });

  it('search: the relevant chunk first, attributes from the file, filters and the score threshold applied', async () => {
    const a = await storeWithFile(DOC, { kind: 'doc', year: 2024 });
    const fileB = newFileId(Date.now());
    files.put(scope, fileB, 'notes.md', NOTES);
    await service.attach(scope, a.storeId, parseAttach({ file_id: fileB, attributes: { kind: 'notes' } }));
    await newWorker().drain();

    const ask = (body: Record<string, unknown>) => service.search(key, a.storeId, parseSearch(body));
    const found = await ask({ query: 'how does yeast make bread rise' });
    expect(found.search_query).toEqual(['how does yeast make bread rise']);
    expect(found.data[0]).toEqual({
      file_id: a.fileId,
      filename: 'doc.txt',
      score: expect.any(Number),
      attributes: { kind: 'doc', year: 2024 },
      content: [{ type: 'text', text: 'Bread rises when yeast ferments the dough.' }],
    });
    expect(found.data.map((d) => d.score)).toEqual([...found.data.map((d) => d.score)].sort((x, y) => y - x));
    // The query was embedded with the store's model, as a request of the caller's key.
    expect(embedder.calls.at(-1)).toEqual({
      apiKeyId: 'key_1',
      model: 'text-embedding-3-small',
      inputs: ['how does yeast make bread rise'],
    });

    const filtered = await ask({
      query: 'bread yeast',
      filters: { type: 'eq', key: 'kind', value: 'notes' },
    });
    expect(filtered.data.length).toBeGreaterThan(0);
    expect(filtered.data.every((d) => d.file_id === fileB)).toBe(true);
    const top = found.data[0]!.score;
    const trimmed = await ask({
      query: 'how does yeast make bread rise',
      ranking_options: { score_threshold: top },
    });
    expect(trimmed.data.map((d) => d.content[0]!.text)).toEqual([
      'Bread rises when yeast ferments the dough.',
    ]);
    expect((await ask({ query: 'yeast', max_num_results: 1 })).data).toHaveLength(1);

    // New attributes take effect in the next search.
    await service.updateFile(scope, a.storeId, fileB, { kind: 'doc' });
    const moved = await ask({ query: 'orbit of mars', filters: { type: 'eq', key: 'kind', value: 'notes' } });
    expect(moved.data).toEqual([]);

    await service.detach(scope, a.storeId, a.fileId);
    const afterDetach = await ask({ query: 'how does yeast make bread rise' });
    expect(afterDetach.data.some((d) => d.file_id === a.fileId)).toBe(false);
    expect(index.stored(ref(a.storeId), a.fileId)).toEqual([]);
  });

  it('a search of a store with nothing searchable makes no embeddings request; another project’s store is a 404', async () => {
    const { storeId } = await storeWithFile();
    const page = await service.search(key, storeId, parseSearch({ query: 'anything' }));
    expect(page.data).toEqual([]);
    expect(embedder.calls).toEqual([]);
    await expect(service.search(other, storeId, parseSearch({ query: 'x' }))).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });
  });

  it('several stores (hosted file_search): one embeddings request per model, the best hits of all; any store not the caller’s is a 404 first', async () => {
    const one = await storeWithFile(DOC);
    const two = await storeWithFile(NOTES);
    const large = await service.create(
      scope,
      parseCreateStore({ embedding_model: 'text-embedding-3-large' }),
    );
    await newWorker().drain();
    embedder.calls.length = 0;
    const request = parseSearch({ query: 'yeast dough orbit mars', max_num_results: 3 });
    const hits = await service.searchStores(key, [one.storeId, two.storeId, large.id, one.storeId], request);
    expect(embedder.calls.map((c) => c.model)).toEqual(['text-embedding-3-small']);
    expect(hits).toHaveLength(3);
    expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((x, y) => y - x));
    expect(new Set(hits.slice(0, 2).map((h) => h.file_id))).toEqual(new Set([one.fileId, two.fileId]));

    embedder.calls.length = 0;
    const theirs = await service.create(
      { orgId: other.orgId, projectId: other.projectId, apiKeyId: other.apiKeyId },
      parseCreateStore({}),
    );
    await expect(service.searchStores(key, [one.storeId, theirs.id], request)).rejects.toMatchObject({
      status: 404,
      param: 'vector_store_id',
    });
    expect(embedder.calls).toEqual([]);
  });

  it('a search whose embedding fails answers with the cause, in the embeddings answer’s status', async () => {
    const { storeId } = await storeWithFile();
    await newWorker().drain();
    embedder.failure = {
      ok: false,
      requestId: 'req_1',
      status: 402,
      code: 'insufficient_funds',
      message: 'the wallet balance is too low',
    };
    const err = await service.search(key, storeId, parseSearch({ query: 'bread' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ status: 402, displayCode: 'insufficient_funds' });
    expect((err as Error).message).toMatch(/text-embedding-3-small.*wallet balance is too low/);
  });
});

describe('durable jobs', () => {
  it('a process that died mid-attach: its lease runs out, another claims the row under a new generation and completes it', async () => {
    const { storeId, fileId } = await storeWithFile();
    // The dead process claimed the row, wrote and even published chunks, and never completed.
    const [dead] = await jobs.claim(1, 60);
    const owner = { ...ref(storeId), fileId, generation: dead!.generation };
    await index.insert(owner, [{ index: 0, text: 'stale', tokens: 1, vector: wordsVector('stale') }]);
    await index.publish(owner, { attributes: {}, chunkCount: 1, tokenCount: 1 });

    // While the lease holds, nobody else takes the row.
    await newWorker().drain();
    expect((await rowOf(storeId, fileId))?.generation).toBe(dead!.generation);
    expect(embedder.calls).toEqual([]);

    await db.pool.query(`UPDATE vector_store_files SET lease_until = now() - interval '1 second'`);
    await newWorker().drain();
    const row = await rowOf(storeId, fileId);
    expect(row?.status).toBe('completed');
    expect(row?.generation).not.toBe(dead!.generation);
    // Only the new generation is stored and visible; the dead claim's chunks are gone.
    expect(index.stored(ref(storeId), fileId).every((c) => c.owner.generation === row?.generation)).toBe(
      true,
    );
    expect(index.visible(ref(storeId)).map((c) => c.text)).toEqual(DOC.split('\n\n'));
  });

  it('a detach during the attach leaves no chunk visible or stored', async () => {
    const { storeId, fileId } = await storeWithFile();
    let detached = false;
    index.beforeInsert = async () => {
      if (detached) return;
      detached = true;
      await service.detach(scope, storeId, fileId);
    };
    await newWorker({ batchSize: 1 }).drain();
    expect(detached).toBe(true);
    expect((await rowOf(storeId, fileId))?.status).toBe('detached');
    expect(index.visible(ref(storeId))).toEqual([]);
    expect(index.stored(ref(storeId), fileId)).toEqual([]);
    expect((await service.search(key, storeId, parseSearch({ query: 'bread' }))).data).toEqual([]);
  });

  it('a detach after the chunks are written, before the row completes, leaves nothing visible either', async () => {
    const { storeId, fileId } = await storeWithFile();
    // Detach as the worker reads the row to publish: the last moment before it completes.
    const indexState = jobs.indexState.bind(jobs);
    let reads = 0;
    jobs.indexState = async (s, f) => {
      if (reads++ === 0) await service.detach(scope, storeId, fileId);
      return indexState(s, f);
    };
    try {
      await newWorker().drain();
    } finally {
      jobs.indexState = indexState;
    }
    expect((await rowOf(storeId, fileId))?.status).toBe('detached');
    expect(index.visible(ref(storeId))).toEqual([]);
    expect(index.stored(ref(storeId), fileId)).toEqual([]);
  });

  it('a store deleted during the attach: nothing visible, and the sweep removes what is left', async () => {
    const { storeId, fileId } = await storeWithFile();
    index.beforeInsert = async () => {
      index.beforeInsert = null;
      await service.delete(scope, storeId);
    };
    await newWorker().drain();
    expect(index.visible(ref(storeId))).toEqual([]);
    expect(index.stored(ref(storeId), fileId)).toEqual([]);
    await service.sweep();
    expect((await db.pool.query('SELECT 1 FROM vector_stores')).rowCount).toBe(0);
    await expect(service.retrieve(scope, storeId)).rejects.toMatchObject({ status: 404 });
  });

  it('a worker that stalled past its lease: the one that took over wins, the stale one’s chunks go', async () => {
    const { storeId, fileId } = await storeWithFile();
    const stalled = gate();
    const resumed = gate();
    let calls = 0;
    embedder.gate = async () => {
      if (calls++ > 0) return;
      resumed.open();
      await stalled.opened;
    };
    const slow = newWorker();
    const running = slow.drain();
    await resumed.opened;
    const stale = await rowOf(storeId, fileId);
    await db.pool.query(`UPDATE vector_store_files SET lease_until = now() - interval '1 second'`);
    await newWorker().drain();
    const done = await rowOf(storeId, fileId);
    expect(done?.status).toBe('completed');
    stalled.open();
    await running;
    expect(await rowOf(storeId, fileId)).toEqual(done);
    expect(index.stored(ref(storeId), fileId).some((c) => c.owner.generation === stale?.generation)).toBe(
      false,
    );
    expect(index.visible(ref(storeId)).every((c) => c.owner.generation === done?.generation)).toBe(true);
    expect(index.visible(ref(storeId))).toHaveLength(2);
  });

  it('a process that stops mid-attach gives its row back at once, and another resumes it', async () => {
    const { storeId, fileId } = await storeWithFile();
    const inEmbed = gate();
    const release = gate();
    embedder.gate = async () => {
      inEmbed.open();
      await release.opened;
    };
    const stopping = newWorker();
    const running = stopping.drain();
    await inEmbed.opened;
    const stopped = stopping.stop();
    release.open();
    await stopped;
    await running;
    const row = await rowOf(storeId, fileId);
    expect(row).toMatchObject({ status: 'in_progress', expired: true });
    // Given back by a process that stopped, not failed: it does not count as an attempt.
    const { rows } = await db.pool.query('SELECT attempts FROM vector_store_files');
    expect(rows).toEqual([{ attempts: 0 }]);
    expect(index.stored(ref(storeId), fileId)).toEqual([]);
    embedder.gate = null;
    await newWorker().drain();
    expect((await rowOf(storeId, fileId))?.status).toBe('completed');
  });
});

describe('failures', () => {
  const lastError = async (storeId: string, fileId: string) => {
    const file = await service.retrieveFile(scope, storeId, fileId);
    expect(file.status).toBe('failed');
    return file.last_error!;
  };

  it('an embeddings failure fails the file naming the model, status and cause; written chunks go', async () => {
    const { storeId, fileId } = await storeWithFile();
    embedder.failure = {
      ok: false,
      requestId: 'req_1',
      status: 404,
      code: 'model_not_found',
      message: 'The model does not exist',
    };
    await newWorker().drain();
    const err = await lastError(storeId, fileId);
    expect(err.code).toBe('server_error');
    expect(err.message).toBe(
      'embedding the chunks with text-embedding-3-small failed (HTTP 404 model_not_found): The model does not exist',
    );
    expect((await service.retrieve(scope, storeId)).file_counts).toMatchObject({ failed: 1, in_progress: 0 });
  });

  it('a rate limit or an upstream outage passes: the file stays in progress, to be tried again', async () => {
    const { storeId, fileId } = await storeWithFile();
    embedder.failure = {
      ok: false,
      requestId: 'req_1',
      status: 429,
      code: 'rate_limit_error',
      message: 'Rate limit reached for requests',
    };
    await newWorker().drain();
    const file = await service.retrieveFile(scope, storeId, fileId);
    expect(file.status).toBe('in_progress');
    expect(file.last_error).toBeNull();
  });

  it('a revoked key, a file that is not text, a file gone: failed with what to do', async () => {
    const a = await storeWithFile();
    revoked.add('key_1');
    await newWorker().drain();
    expect((await lastError(a.storeId, a.fileId)).message).toMatch(
      /API key that attached this file \(key_1\) has been revoked/,
    );
    revoked.clear();

    const b = await storeWithFile();
    files.put(scope, b.fileId, 'blob.bin', Buffer.from([0, 159, 146, 150, 0, 1]));
    await newWorker().drain();
    expect(await lastError(b.storeId, b.fileId)).toEqual({
      code: 'invalid_file',
      message: 'blob.bin is not text',
    });

    const c = await storeWithFile();
    files.files.clear();
    await newWorker().drain();
    expect(await lastError(c.storeId, c.fileId)).toEqual({
      code: 'invalid_file',
      message: `the file ${c.fileId} no longer exists`,
    });
  });

  it('an index that does not answer: the row is given back to retry, and failed once attempts run out', async () => {
    const { storeId, fileId } = await storeWithFile();
    index.down = new Error('analytics unavailable');
    await newWorker({ maxAttempts: 2, retrySeconds: 0 }).drain();
    expect(await lastError(storeId, fileId)).toEqual({
      code: 'server_error',
      message: 'indexing gave up after 2 attempts; the last one failed: analytics unavailable',
    });
  });
});

describe('attach checks', () => {
  it('a store created with file_ids attaches them with its chunking; any file not the caller’s creates nothing', async () => {
    const [one, two] = [newFileId(Date.now()), newFileId(Date.now() + 1)];
    files.put(scope, one, 'one.txt', DOC);
    files.put(scope, two, 'two.md', NOTES);
    const theirs = newFileId(Date.now());
    files.put({ orgId: other.orgId, projectId: other.projectId }, theirs, 'x.txt', DOC);
    const refused = await service
      .create(scope, parseCreateStore({ file_ids: [one, theirs] }))
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 404, param: 'file_ids' });
    expect((await db.pool.query('SELECT 1 FROM vector_stores')).rowCount).toBe(0);

    const chunking = { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 100 } };
    const store = await service.create(
      scope,
      parseCreateStore({ file_ids: [one, two], chunking_strategy: chunking }),
    );
    expect(store).toMatchObject({ status: 'in_progress', file_counts: { in_progress: 2, total: 2 } });
    await newWorker().drain();
    const listed = await service.listFiles(scope, store.id, parseFileList({ order: 'asc' }));
    expect(listed.data.map((f) => [f.id, f.status, f.chunking_strategy])).toEqual([
      [one, 'completed', chunking],
      [two, 'completed', chunking],
    ]);
  });

  it('a file of another project is a 404 on file_id, like one that does not exist', async () => {
    const { storeId } = await storeWithFile();
    const theirs = newFileId(Date.now());
    files.put({ orgId: other.orgId, projectId: other.projectId }, theirs, 'x.txt', DOC);
    const err = await service
      .attach(scope, storeId, parseAttach({ file_id: theirs }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, param: 'file_id' });
    const none = await service
      .attach(scope, storeId, parseAttach({ file_id: newFileId(Date.now()) }))
      .catch((e: unknown) => e);
    expect((none as Error).message.replace(/file-\w+/, 'ID')).toBe(
      (err as Error).message.replace(/file-\w+/, 'ID'),
    );
    // Only the store's own file was attached.
    expect((await jobs.claim(5, 60)).map((c) => c.fileId)).not.toContain(theirs);
  });
});

// SPEC 4.1 /v1/vector_stores/{id}/file_batches: many files attached at once, each an ordinary
// attach job; the batch counts and lists its files as they are now; a cancel ends those in progress.
describe('file batches', () => {
  const three = () => {
    const ids = [newFileId(Date.now()), newFileId(Date.now() + 1), newFileId(Date.now() + 2)];
    for (const [i, id] of ids.entries()) files.put(scope, id, `f${i}.txt`, i === 1 ? NOTES : DOC);
    return ids;
  };

  it('attaches every file with the batch attributes and chunking, counts them, and completes', async () => {
    const store = await service.create(scope, parseCreateStore({ name: 'docs' }));
    const ids = three();
    const chunking = { type: 'static', static: { max_chunk_size_tokens: 300, chunk_overlap_tokens: 0 } };
    const batch = await service.createBatch(
      scope,
      store.id,
      parseCreateBatch({
        file_ids: [...ids, ids[0]],
        attributes: { team: 'a' },
        chunking_strategy: chunking,
      }),
    );
    expect(batch).toMatchObject({
      object: 'vector_store.files_batch',
      vector_store_id: store.id,
      status: 'in_progress',
      file_counts: { in_progress: 3, completed: 0, failed: 0, cancelled: 0, total: 3 },
    });
    expect(batch.id).toMatch(/^vsfb_/);
    await newWorker().drain();
    expect(await service.retrieveBatch(scope, store.id, batch.id)).toMatchObject({
      status: 'completed',
      file_counts: { in_progress: 0, completed: 3, total: 3 },
    });
    const listed = await service.listBatchFiles(scope, store.id, batch.id, parseFileList({ order: 'asc' }));
    expect(listed.data.map((f) => [f.id, f.status, f.attributes, f.chunking_strategy])).toEqual(
      ids.map((id) => [id, 'completed', { team: 'a' }, chunking]),
    );
    // Another batch of the same store names only its own files.
    const later = newFileId(Date.now() + 10);
    files.put(scope, later, 'later.txt', NOTES);
    const second = await service.createBatch(
      scope,
      store.id,
      parseCreateBatch({ files: [{ file_id: later }] }),
    );
    const secondFiles = await service.listBatchFiles(scope, store.id, second.id, parseFileList({}));
    expect(secondFiles.data.map((f) => f.id)).toEqual([later]);
    expect((await service.retrieve(scope, store.id)).file_counts.total).toBe(4);
  });

  it('any file not the caller’s attaches nothing; a batch of another project is a 404', async () => {
    const store = await service.create(scope, parseCreateStore({}));
    const [mine] = three();
    const theirs = newFileId(Date.now());
    files.put({ orgId: other.orgId, projectId: other.projectId }, theirs, 'x.txt', DOC);
    const refused = await service
      .createBatch(scope, store.id, parseCreateBatch({ file_ids: [mine!, theirs] }))
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 404, param: 'file_ids' });
    expect((await db.pool.query('SELECT 1 FROM vector_store_files')).rowCount).toBe(0);
    expect((await db.pool.query('SELECT 1 FROM vector_store_file_batches')).rowCount).toBe(0);

    const batch = await service.createBatch(scope, store.id, parseCreateBatch({ file_ids: [mine!] }));
    const otherScope = { orgId: other.orgId, projectId: other.projectId, apiKeyId: other.apiKeyId };
    for (const attempt of [
      () => service.retrieveBatch(otherScope, store.id, batch.id),
      () => service.cancelBatch(otherScope, store.id, batch.id),
      () => service.listBatchFiles(otherScope, store.id, batch.id, parseFileList({})),
    ])
      expect(await attempt().catch((e: unknown) => e)).toMatchObject({ status: 404 });
    // Another store of the caller's does not hold the batch either.
    const second = await service.create(scope, parseCreateStore({}));
    expect(await service.retrieveBatch(scope, second.id, batch.id).catch((e: unknown) => e)).toMatchObject({
      status: 404,
      param: 'batch_id',
    });
    expect((await service.retrieveBatch(scope, store.id, batch.id)).status).toBe('in_progress');
  });

  it('a cancel mid-attach: files in progress end cancelled with nothing visible, completed ones stay', async () => {
    const store = await service.create(scope, parseCreateStore({}));
    const ids = three();
    const batch = await service.createBatch(scope, store.id, parseCreateBatch({ file_ids: ids }));
    // The first file completes; the batch is cancelled as the second one is being written.
    let inserts = 0;
    index.beforeInsert = async () => {
      if (inserts++ === 2) await service.cancelBatch(scope, store.id, batch.id);
    };
    await newWorker({ concurrency: 1 }).drain();
    const after = await service.retrieveBatch(scope, store.id, batch.id);
    expect(after.status).toBe('cancelled');
    expect(after.file_counts.completed + after.file_counts.cancelled).toBe(3);
    expect(after.file_counts.cancelled).toBeGreaterThan(0);
    const cancelled = (
      await service.listBatchFiles(scope, store.id, batch.id, parseFileList({ filter: 'cancelled' }))
    ).data;
    const visible = new Set(index.visible(ref(store.id)).map((c) => c.owner.fileId));
    for (const f of cancelled) {
      expect(visible.has(f.id)).toBe(false);
      expect(index.stored(ref(store.id), f.id)).toEqual([]);
    }
    // A cancelled file attached again is indexed again.
    const again = await service.attach(scope, store.id, parseAttach({ file_id: cancelled[0]!.id }));
    expect(again.status).toBe('in_progress');
    await newWorker().drain();
    expect((await service.retrieveFile(scope, store.id, cancelled[0]!.id)).status).toBe('completed');
  });

  it('the parsed content of a completed file is its extracted text', async () => {
    const { storeId, fileId } = await storeWithFile(NOTES);
    expect(await service.fileContent(scope, storeId, fileId).catch((e: unknown) => e)).toMatchObject({
      status: 400,
      param: 'file_id',
    });
    await newWorker().drain();
    expect(await service.fileContent(scope, storeId, fileId)).toEqual({
      object: 'vector_store.file_content.page',
      data: [{ type: 'text', text: NOTES }],
      has_more: false,
      next_page: null,
    });
    const otherScope = { orgId: other.orgId, projectId: other.projectId, apiKeyId: other.apiKeyId };
    expect(await service.fileContent(otherScope, storeId, fileId).catch((e: unknown) => e)).toMatchObject({
      status: 404,
    });
  });

  it('the request: exactly one of file_ids and files, batch-wide options only with file_ids', () => {
    const bad = (body: unknown) => {
      try {
        parseCreateBatch(body);
        return null;
      } catch (err) {
        return (err as ServiceError).param;
      }
    };
    expect(bad({})).toBe('file_ids');
    expect(bad({ file_ids: ['file-a'], files: [{ file_id: 'file-b' }] })).toBe('files');
    expect(bad({ files: [{ file_id: 'file-b' }], attributes: { a: 1 } })).toBe('attributes');
    expect(bad({ file_ids: [] })).toBe('file_ids');
    expect(bad({ file_ids: Array.from({ length: 2001 }, (_, i) => `file-${i}`) })).toBe('file_ids');
    expect(bad({ file_ids: ['file-a'], extra: 1 })).toBe('extra');
    expect(
      parseCreateBatch({ files: [{ file_id: 'file-a', attributes: { x: 1 } }, { file_id: 'file-a' }] }),
    ).toEqual([
      {
        fileId: 'file-a',
        attributes: { x: 1 },
        chunking: { maxChunkSizeTokens: 800, chunkOverlapTokens: 400 },
      },
    ]);
  });
});
