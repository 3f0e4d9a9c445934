import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeClickHouse, startFakeClickHouse } from '../../test/fakes/clickhouse-http.js';
import { uniqueSuffix } from '../../test/helpers/env.js';
import { ChdbAnalyticsStore } from '../analytics/chdb/store.js';
import { HttpAnalyticsStore } from '../analytics/http/store.js';
import { migrateClickHouse } from '../analytics/migrate.js';
import type { AnalyticsStore } from '../analytics/port.js';
import { DEFAULT_CHUNKING_STRATEGY } from './chunking.js';
import { type Attributes, type Filter, matchesFilter } from './filters.js';
import { indexFile } from './ingest.js';
import { newGeneration, VectorChunkStore, type VectorScope } from './store.js';

/**
 * The vector engine against both analytics adapters: chdb in a worker thread, and the HTTP adapter
 * (@clickhouse/client) against the chdb-backed test server, migrated by the real migration runner.
 */

const DIM = 8;

/** A deterministic unit vector: mostly along axis `axis`, tilted by `tilt` towards the next axis. */
const vec = (axis: number, tilt = 0): number[] => {
  const v = new Array<number>(DIM).fill(0);
  v[axis % DIM] = Math.cos(tilt);
  v[(axis + 1) % DIM] = Math.sin(tilt);
  return v;
};

interface Fixture {
  store: AnalyticsStore;
  cleanup(): Promise<void>;
}

const suite = (name: string, open: () => Promise<Fixture>) =>
  describe(`vector store engine: ${name}`, () => {
    let fixture: Fixture;
    let vectors: VectorChunkStore;
    const scope = (): VectorScope => ({
      orgId: 'org_a',
      projectId: 'proj_a',
      vectorStoreId: `vs_${uniqueSuffix()}`,
    });

    beforeAll(async () => {
      fixture = await open();
      const migrated = await migrateClickHouse(fixture.store);
      expect(migrated.applied).toContain('0004_vector_chunks.sql');
      vectors = new VectorChunkStore(fixture.store, { insertBatchRows: 3 });
    });
    afterAll(async () => {
      await fixture?.cleanup();
    });

    /** Publishes a file whose chunk i points along axis (base + i), tilted by `tilt`. */
    const attach = async (
      s: VectorScope,
      fileId: string,
      base: number,
      n: number,
      attributes: Attributes = {},
    ) => {
      const generation = newGeneration();
      await vectors.insertChunks(
        s,
        fileId,
        generation,
        Array.from({ length: n }, (_, i) => ({
          chunkIndex: i,
          text: `${fileId} chunk ${i}`,
          tokenCount: 3,
          embedding: new Float32Array(vec(base + i, 0.1)),
        })),
      );
      await vectors.publishFile(s, { fileId, generation, attributes, chunkCount: n, tokenCount: 3 * n });
      return generation;
    };

    it('ranks by cosine similarity, scores 1 - cosineDistance, and keeps stores and tenants apart', async () => {
      const s = scope();
      await attach(s, 'file_1', 0, 4, { author: 'ada', year: 2024, draft: false });
      // Same ids in another store, project and organization: never seen from `s`.
      for (const other of [
        { ...s, vectorStoreId: `${s.vectorStoreId}_other` },
        { ...s, projectId: 'proj_b' },
        { ...s, orgId: 'org_b' },
      ]) {
        await attach(other, 'file_1', 0, 4);
      }
      const hits = await vectors.search(s, { queryEmbeddings: [vec(2)], maxNumResults: 10 });
      // Chunks 0 and 3 are both orthogonal to the query: ties are ordered by file and chunk index.
      expect(hits.map((h) => h.chunkIndex)).toEqual([2, 1, 0, 3]);
      expect(hits[0]).toMatchObject({
        fileId: 'file_1',
        text: 'file_1 chunk 2',
        attributes: { author: 'ada', year: 2024, draft: false },
      });
      expect(hits[0]!.score).toBeCloseTo(Math.cos(0.1), 5);
      expect(hits[1]!.score).toBeCloseTo(Math.sin(0.1), 5); // chunk 1 leans towards axis 2
      expect(hits[3]!.score).toBeCloseTo(0, 5);
      expect(await vectors.stats(s)).toEqual({ files: 1, chunks: 4, tokens: 12 });
    });

    it('applies max_num_results, the score threshold and several query embeddings', async () => {
      const s = scope();
      await attach(s, 'file_1', 0, 6);
      expect(await vectors.search(s, { queryEmbeddings: [vec(3)], maxNumResults: 2 })).toHaveLength(2);
      const strong = await vectors.search(s, {
        queryEmbeddings: [vec(3)],
        maxNumResults: 10,
        scoreThreshold: 0.5,
      });
      expect(strong.map((h) => h.chunkIndex)).toEqual([3]);
      const both = await vectors.search(s, {
        queryEmbeddings: [vec(1), vec(4)],
        maxNumResults: 10,
        scoreThreshold: 0.5,
      });
      expect(both.map((h) => h.chunkIndex).sort()).toEqual([1, 4]);
    });

    it('evaluates filters in SQL exactly as the reference evaluator does', async () => {
      const s = scope();
      const files: Record<string, Attributes> = {
        f_a: { author: 'ada', year: 2023, draft: true, tag: 'x' },
        f_b: { author: 'bob', year: 2024, draft: false },
        f_c: { author: "o'hara\\", year: 2025.5 },
        f_d: { year: '2024' },
        f_e: {},
      };
      for (const [i, [fileId, attributes]] of Object.entries(files).entries())
        await attach(s, fileId, i, 1, attributes);
      const filters: Filter[] = [
        { type: 'eq', key: 'author', value: 'ada' },
        { type: 'eq', key: 'author', value: "o'hara\\" },
        { type: 'eq', key: 'year', value: 2024 },
        { type: 'eq', key: 'year', value: '2024' },
        { type: 'ne', key: 'author', value: 'ada' },
        { type: 'gt', key: 'year', value: 2023 },
        { type: 'gte', key: 'year', value: 2023 },
        { type: 'lt', key: 'author', value: 'b' },
        { type: 'lte', key: 'year', value: 2024 },
        { type: 'eq', key: 'draft', value: false },
        { type: 'ne', key: 'draft', value: true },
        { type: 'in', key: 'author', value: ['bob', 'ada', 7] },
        { type: 'in', key: 'year', value: [2023, '2024'] },
        { type: 'nin', key: 'author', value: ['bob'] },
        { type: 'in', key: 'author', value: [] },
        { type: 'eq', key: "key' OR 1=1 --", value: "x' OR '1'='1" },
        {
          type: 'or',
          filters: [
            {
              type: 'and',
              filters: [
                { type: 'eq', key: 'draft', value: true },
                { type: 'eq', key: 'tag', value: 'x' },
              ],
            },
            { type: 'gte', key: 'year', value: 2025 },
          ],
        },
      ];
      for (const filter of filters) {
        const hits = await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 50, filter });
        const expected = Object.keys(files)
          .filter((f) => matchesFilter(filter, files[f]!))
          .sort();
        expect({ filter, files: hits.map((h) => h.fileId).sort() }).toEqual({ filter, files: expected });
      }
    });

    it('hides a detached file at once, and a re-attach shows only its new chunks', async () => {
      const s = scope();
      const first = await attach(s, 'file_1', 0, 3);
      await attach(s, 'file_2', 4, 2);
      expect(await vectors.detachFile(s, 'file_1')).toBe(first);
      expect(await vectors.detachFile(s, 'file_1')).toBeNull();
      let hits = await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 50 });
      expect(new Set(hits.map((h) => h.fileId))).toEqual(new Set(['file_2']));

      await attach(s, 'file_1', 0, 1);
      hits = await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 50 });
      expect(hits.filter((h) => h.fileId === 'file_1').map((h) => h.chunkIndex)).toEqual([0]);
      await vectors.purgeFile(s, 'file_1', first);
      expect(await vectors.stats(s)).toMatchObject({ files: 2, chunks: 3 });
      expect(await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 50 })).toHaveLength(3);
    });

    it('does not search chunks whose file is not published yet', async () => {
      const s = scope();
      await vectors.insertChunks(s, 'file_1', newGeneration(), [
        { chunkIndex: 0, text: 'pending', tokenCount: 1, embedding: vec(0) },
      ]);
      expect(await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 5 })).toEqual([]);
    });

    it('updates attributes for the next search', async () => {
      const s = scope();
      await attach(s, 'file_1', 0, 2, { team: 'a' });
      expect(await vectors.updateAttributes(s, 'file_1', { team: 'b', n: 1 })).toBe(true);
      expect(await vectors.updateAttributes(s, 'file_9', { team: 'b' })).toBe(false);
      const hits = await vectors.search(s, {
        queryEmbeddings: [vec(0)],
        maxNumResults: 5,
        filter: { type: 'eq', key: 'team', value: 'b' },
      });
      expect(hits.map((h) => h.attributes)).toEqual([
        { team: 'b', n: 1 },
        { team: 'b', n: 1 },
      ]);
    });

    it('deletes a store: hidden at once, rows gone after purge', async () => {
      const s = scope();
      await attach(s, 'file_1', 0, 2);
      await attach(s, 'file_2', 2, 2);
      expect(await vectors.deleteStore(s)).toBe(2);
      expect(await vectors.search(s, { queryEmbeddings: [vec(0)], maxNumResults: 5 })).toEqual([]);
      expect(await vectors.stats(s)).toEqual({ files: 0, chunks: 0, tokens: 0 });
      await vectors.purgeStore(s);
      const [left] = await fixture.store.query<{ n: string }>(
        'SELECT count() AS n FROM vector_chunks WHERE vector_store_id = {store:String}',
        { store: s.vectorStoreId },
      );
      expect(left?.n).toBe('0');
    });

    it('two-stage search finds the exact top results on a store with structure', async () => {
      const s = scope();
      const dims = 64;
      // 40 clusters of 10 chunks; each chunk is its cluster's direction plus small noise.
      let seed = 7;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648 - 0.5;
      };
      const centers = Array.from({ length: 40 }, () => Array.from({ length: dims }, rand));
      const chunkVectors = Array.from({ length: 400 }, (_, i) =>
        centers[i % 40]!.map((x) => x + 0.3 * rand()),
      );
      const generation = newGeneration();
      await new VectorChunkStore(fixture.store).insertChunks(
        s,
        'file_1',
        generation,
        chunkVectors.map((embedding, i) => ({ chunkIndex: i, text: `c${i}`, tokenCount: 1, embedding })),
      );
      await vectors.publishFile(s, {
        fileId: 'file_1',
        generation,
        attributes: {},
        chunkCount: 400,
        tokenCount: 400,
      });
      const query = centers[17]!.map((x) => x + 0.1 * rand());
      const exact = await vectors.search(s, {
        queryEmbeddings: [query],
        maxNumResults: 5,
        strategy: 'exact',
      });
      const twoStage = await vectors.search(s, {
        queryEmbeddings: [query],
        maxNumResults: 5,
        strategy: 'two_stage',
      });
      expect(exact.every((h) => h.chunkIndex % 40 === 17)).toBe(true);
      expect(twoStage).toEqual(exact);
      // `auto` switches to two-stage above the threshold and still answers the same.
      const small = new VectorChunkStore(fixture.store, { exactUpTo: 100, candidates: 100 });
      expect(await small.search(s, { queryEmbeddings: [query], maxNumResults: 5 })).toEqual(exact);
    });

    it('indexes a file end to end: extract, chunk, embed, write, publish', async () => {
      const s = scope();
      const text = Array.from({ length: 300 }, (_, i) => `Sentence number ${i} about vector stores.`).join(
        ' ',
      );
      const seen: string[] = [];
      const result = await indexFile(vectors, {
        scope: s,
        fileId: 'file_doc',
        bytes: new TextEncoder().encode(text),
        filename: 'notes.md',
        contentType: 'text/markdown',
        chunking: { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 50 } },
        attributes: { kind: 'notes' },
        embed: async (texts) => {
          seen.push(...texts);
          return texts.map((_, i) => vec(seen.length - texts.length + i));
        },
        embedBatch: 4,
      });
      expect(result).toMatchObject({ ok: true, chunkCount: seen.length });
      expect(seen.length).toBeGreaterThan(5);
      expect(await vectors.stats(s)).toMatchObject({ files: 1, chunks: seen.length });
      const hits = await vectors.search(s, { queryEmbeddings: [vec(2)], maxNumResults: 1 });
      expect(hits[0]).toMatchObject({
        fileId: 'file_doc',
        chunkIndex: 2,
        text: seen[2],
        attributes: { kind: 'notes' },
      });

      const refused = await indexFile(vectors, {
        scope: s,
        fileId: 'file_img',
        bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
        filename: 'photo.png',
        contentType: 'image/png',
        chunking: DEFAULT_CHUNKING_STRATEGY,
        attributes: {},
        embed: async () => {
          throw new Error('must not embed');
        },
      });
      expect(refused).toMatchObject({ ok: false, error: { code: 'unsupported_file' } });
    });
  });

suite('chdb', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-vectors-chdb-'));
  const store = await ChdbAnalyticsStore.open({
    path: dir,
    database: `vx_${uniqueSuffix()}`,
    createDatabase: true,
  });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

suite('ClickHouse over HTTP (against the chdb-backed test server)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-vectors-http-'));
  const server: FakeClickHouse = await startFakeClickHouse({ path: dir });
  const store = await HttpAnalyticsStore.open({
    url: server.url,
    database: `vx_${uniqueSuffix()}`,
    createDatabase: true,
  });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
