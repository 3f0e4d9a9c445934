import type { AnalyticsStore } from '../analytics/port.js';
import { type Attributes, attributeColumns, compileFilter, type Filter, SqlParams } from './filters.js';
import type { SearchHit } from './search.js';

/**
 * Chunks, embeddings and search of vector stores (SPEC 4.1 /v1/vector_stores), in ClickHouse
 * through the analytics port: the embedded chdb engine and a ClickHouse server run the same SQL.
 * Tables: migrations/clickhouse/0004_vector_chunks.sql.
 *
 * Every statement is scoped by org_id, project_id and vector_store_id (the leading sorting-key
 * columns), so a store's reads touch its own rows only. Chunks are searchable once their file is
 * published, and hidden at once when the file is detached or the store deleted; the rows are
 * removed by `purgeFile` / `purgeStore`, off the request path.
 *
 * Search is exact below `exactUpTo` live chunks in the store: cosine similarity against every
 * chunk, which is also exact under any metadata filter. Above it, two-stage: chunks ranked by the
 * Hamming distance of their sign-bit signature to the query's (32x fewer bytes than the Float32
 * vectors), then exact cosine over the best candidates of them (twoStageCandidates).
 *
 * Not ClickHouse's HNSW index (vector_similarity): the engine uses it only for a part the primary
 * key selects whole, so in a table shared by stores it is skipped, and serving it would take a
 * part per store (PARTITION BY store), one fixed dimension per table, an index build of 1.5-3k
 * chunks/s here redone by every merge, and an index that fits the engine's cache; filters and
 * hidden files would become post-filters that can return fewer than max_num_results. Measurements
 * of all three: bench/vector.
 */

export interface VectorScope {
  orgId: string;
  projectId: string;
  vectorStoreId: string;
}

export interface ChunkRow {
  chunkIndex: number;
  text: string;
  tokenCount: number;
  embedding: ArrayLike<number>;
}

export interface PublishedFile {
  fileId: string;
  generation: bigint;
  attributes: Attributes;
  chunkCount: number;
  tokenCount: number;
}

export type SearchStrategy = 'auto' | 'exact' | 'two_stage';

export interface SearchRequest {
  /** One or more query embeddings; a chunk scores its best similarity to any of them. */
  queryEmbeddings: readonly ArrayLike<number>[];
  maxNumResults: number;
  scoreThreshold?: number;
  filter?: Filter | null;
  strategy?: SearchStrategy;
}

export interface VectorStoreOptions {
  /** Rows per INSERT when writing chunks (each row carries its whole embedding). */
  insertBatchRows?: number;
  /** `auto` searches exactly up to this many live chunks in the store, two-stage above. */
  exactUpTo?: number;
  /** The least number of candidates the two-stage search rescores exactly (twoStageCandidates). */
  candidates?: number;
}

export const CHUNKS_TABLE = 'vector_chunks';
export const FILES_TABLE = 'vector_store_files';
const DEFAULTS: Required<VectorStoreOptions> = { insertBatchRows: 256, exactUpTo: 20_000, candidates: 200 };

let lastStamp = 0n;
/**
 * A fresh version or attach generation: microseconds since the epoch, strictly increasing in this
 * process. Each attach (and each retry of one) takes a new generation, so chunks written by an
 * earlier or abandoned attempt are never searched alongside the published ones.
 */
export const newGeneration = (): bigint => {
  const now = BigInt(Date.now()) * 1000n;
  lastStamp = now > lastStamp ? now : lastStamp + 1n;
  return lastStamp;
};

const SCOPE_SQL =
  'org_id = {org:String} AND project_id = {project:String} AND vector_store_id = {store:String}';
const scopeParams = (scope: VectorScope) => ({
  org: scope.orgId,
  project: scope.projectId,
  store: scope.vectorStoreId,
});

/** The latest row of each file of the store; outer conditions cannot be pushed through LIMIT BY. */
const LATEST_FILES = `
  SELECT file_id, generation, version, deleted, chunk_count, token_count, attributes, attr_string, attr_number, attr_bool
  FROM ${FILES_TABLE}
  WHERE ${SCOPE_SQL}
  ORDER BY file_id, version DESC
  LIMIT 1 BY file_id`;

/** The SQL of the signature column (0004_vector_chunks.sql), for the query side. */
const signatureOf = (vector: string): string =>
  `unhex(arrayStringConcat(arrayMap(w -> leftPad(hex(w), 16, '0'), arrayMap(c -> arraySum(c), arraySplit((x, i) -> i % 64 = 0, arrayMap((x, i) -> bitShiftLeft(toUInt64(x > 0), i % 64), ${vector}, range(length(${vector}))), range(length(${vector})))))))`;

/**
 * How many signature-ranked chunks the two-stage search rescores exactly: at least `floor`, 10 per
 * result asked for, and one per 2,000 live chunks, since the more chunks share a neighbourhood, the
 * more of them a 1-bit signature cannot tell apart (bench/vector: recall@10 falls from 1.0 at 100k
 * chunks to 0.6 at 1M with a flat 200).
 */
export const twoStageCandidates = (floor: number, maxNumResults: number, liveChunks: number): number =>
  Math.max(floor, 10 * maxNumResults, Math.ceil(liveChunks / 2000));

const toPlainArray = (embedding: ArrayLike<number>): number[] =>
  Array.isArray(embedding) ? embedding : Array.from(embedding);

export class VectorChunkStore {
  private readonly options: Required<VectorStoreOptions>;

  constructor(
    private readonly analytics: AnalyticsStore,
    options: VectorStoreOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /**
   * Writes chunks of one attach in batches. They stay invisible until `publishFile` names their
   * generation.
   */
  async insertChunks(
    scope: VectorScope,
    fileId: string,
    generation: bigint,
    chunks: readonly ChunkRow[],
  ): Promise<void> {
    const batch = this.options.insertBatchRows;
    for (let start = 0; start < chunks.length; start += batch) {
      const rows = chunks.slice(start, start + batch).map((c) => ({
        org_id: scope.orgId,
        project_id: scope.projectId,
        vector_store_id: scope.vectorStoreId,
        file_id: fileId,
        generation: generation.toString(),
        chunk_index: c.chunkIndex,
        text: c.text,
        token_count: c.tokenCount,
        embedding: toPlainArray(c.embedding),
      }));
      await this.analytics.insert(CHUNKS_TABLE, rows);
    }
  }

  /** Makes a file's chunks of `generation` the searchable ones, with its attributes. */
  async publishFile(scope: VectorScope, file: PublishedFile): Promise<void> {
    await this.analytics.insert(FILES_TABLE, [
      {
        org_id: scope.orgId,
        project_id: scope.projectId,
        vector_store_id: scope.vectorStoreId,
        file_id: file.fileId,
        generation: file.generation.toString(),
        version: newGeneration().toString(),
        deleted: false,
        chunk_count: file.chunkCount,
        token_count: file.tokenCount,
        attributes: JSON.stringify(file.attributes),
        ...attributeColumns(file.attributes),
        updated_at: new Date(),
      },
    ]);
  }

  /**
   * New attributes for a published file (OpenAI's update of a vector store file); takes effect for
   * the next search. False when the file is not live in the store.
   */
  async updateAttributes(scope: VectorScope, fileId: string, attributes: Attributes): Promise<boolean> {
    const cols = attributeColumns(attributes);
    return this.rewriteLatest(scope, fileId, 'false', {
      attributes: JSON.stringify(attributes),
      attr_string: cols.attr_string,
      attr_number: cols.attr_number,
      attr_bool: cols.attr_bool,
    });
  }

  /**
   * Hides a file's chunks from search at once. Returns the generation it hid (for `purgeFile`), or
   * null when the file was not live in the store.
   */
  async detachFile(scope: VectorScope, fileId: string): Promise<bigint | null> {
    const [live] = await this.analytics.query<{ generation: string }>(
      `SELECT generation FROM (${LATEST_FILES}) WHERE file_id = {file:String} AND NOT deleted`,
      { ...scopeParams(scope), file: fileId },
    );
    if (!live) return null;
    await this.rewriteLatest(scope, fileId, 'true', null);
    return BigInt(live.generation);
  }

  /** Hides every file of the store at once (store deletion). Returns how many files it hid. */
  async deleteStore(scope: VectorScope): Promise<number> {
    const [count] = await this.analytics.query<{ n: string }>(
      `SELECT count() AS n FROM (${LATEST_FILES}) WHERE NOT deleted`,
      scopeParams(scope),
    );
    await this.analytics.command(
      `INSERT INTO ${FILES_TABLE}
         (org_id, project_id, vector_store_id, file_id, generation, version, deleted, chunk_count,
          token_count, attributes, attr_string, attr_number, attr_bool, updated_at)
       SELECT {org:String}, {project:String}, {store:String}, file_id, generation, {version:UInt64}, true,
         chunk_count, token_count, attributes, attr_string, attr_number, attr_bool, now64(3)
       FROM (${LATEST_FILES}) WHERE NOT deleted`,
      { ...scopeParams(scope), version: newGeneration().toString() },
    );
    return Number(count?.n ?? 0);
  }

  /** Removes the chunk rows of one attach generation (after a detach, a failed or a replaced attach). */
  async purgeFile(scope: VectorScope, fileId: string, generation: bigint): Promise<void> {
    await this.analytics.command(
      `DELETE FROM ${CHUNKS_TABLE} WHERE ${SCOPE_SQL} AND file_id = {file:String} AND generation = {generation:UInt64}`,
      { ...scopeParams(scope), file: fileId, generation: generation.toString() },
    );
  }

  /** Removes every row of a deleted store. */
  async purgeStore(scope: VectorScope): Promise<void> {
    await this.analytics.command(`DELETE FROM ${CHUNKS_TABLE} WHERE ${SCOPE_SQL}`, scopeParams(scope));
    await this.analytics.command(`DELETE FROM ${FILES_TABLE} WHERE ${SCOPE_SQL}`, scopeParams(scope));
  }

  /** Live files and chunks of the store. */
  async stats(scope: VectorScope): Promise<{ files: number; chunks: number; tokens: number }> {
    const [row] = await this.analytics.query<{ files: string; chunks: string; tokens: string }>(
      `SELECT count() AS files, sum(chunk_count) AS chunks, sum(token_count) AS tokens
       FROM (${LATEST_FILES}) WHERE NOT deleted`,
      scopeParams(scope),
    );
    return {
      files: Number(row?.files ?? 0),
      chunks: Number(row?.chunks ?? 0),
      tokens: Number(row?.tokens ?? 0),
    };
  }

  /**
   * The best chunks of the store's live files matching `filter`, by cosine similarity to the
   * query embedding(s), best first, at most `maxNumResults`, none below `scoreThreshold`.
   */
  async search(scope: VectorScope, request: SearchRequest): Promise<SearchHit[]> {
    if (request.queryEmbeddings.length === 0)
      throw new RangeError('search needs at least one query embedding');
    const params = new SqlParams('f');
    const filterSql = compileFilter(request.filter ?? null, params);
    const live = `SELECT file_id, generation, attributes, chunk_count FROM (${LATEST_FILES}) WHERE NOT deleted AND ${filterSql}`;
    const values: Record<string, unknown> = { ...scopeParams(scope), ...params.values };
    const queries = request.queryEmbeddings.map((q, i) => {
      values[`q${i}`] = toPlainArray(q);
      return `{q${i}:Array(Float32)}`;
    });
    const similarity = (q: string) => `(1 - cosineDistance(embedding, ${q}))`;
    const score =
      queries.length === 1 ? similarity(queries[0]!) : `greatest(${queries.map(similarity).join(', ')})`;

    let strategy = request.strategy ?? 'auto';
    let liveChunks = 0;
    if (strategy !== 'exact') {
      const [row] = await this.analytics.query<{ chunks: string }>(
        `SELECT sum(chunk_count) AS chunks FROM (${live})`,
        values,
      );
      liveChunks = Number(row?.chunks ?? 0);
      if (strategy === 'auto') strategy = liveChunks > this.options.exactUpTo ? 'two_stage' : 'exact';
    }

    const liveKeys = `(file_id, generation) IN (SELECT file_id, generation FROM live)`;
    let source = `${CHUNKS_TABLE} WHERE ${SCOPE_SQL} AND ${liveKeys}`;
    if (strategy === 'two_stage') {
      const hamming = (q: string) => `bitHammingDistance(signature, ${signatureOf(q)})`;
      const distance =
        queries.length === 1 ? hamming(queries[0]!) : `least(${queries.map(hamming).join(', ')})`;
      values.candidates = twoStageCandidates(this.options.candidates, request.maxNumResults, liveChunks);
      // The engine reads text and embedding of the candidates only (lazy materialization of
      // ORDER BY ... LIMIT), not of every chunk the signature scan ranked.
      source = `(
        SELECT file_id, generation, chunk_index, text, embedding FROM ${source}
        ORDER BY ${distance} ASC
        LIMIT {candidates:UInt32})`;
    }
    values.limit = request.maxNumResults;
    values.threshold = request.scoreThreshold ?? 0;
    const rows = await this.analytics.query<{
      file_id: string;
      chunk_index: number;
      text: string;
      score: number;
      attributes: string;
    }>(
      `WITH live AS (${live})
       SELECT hit.file_id AS file_id, hit.chunk_index AS chunk_index, hit.text AS text, hit.score AS score,
         files.attributes AS attributes
       FROM (
         SELECT file_id, generation, chunk_index, text, ${score} AS score
         FROM ${source}
         ORDER BY score DESC, file_id, chunk_index
         LIMIT {limit:UInt32}
       ) AS hit
       INNER JOIN live AS files ON hit.file_id = files.file_id AND hit.generation = files.generation
       WHERE hit.score >= {threshold:Float64}
       ORDER BY score DESC, file_id, chunk_index`,
      values,
    );
    return rows.map((r) => ({
      fileId: r.file_id,
      chunkIndex: Number(r.chunk_index),
      score: Number(r.score),
      text: r.text,
      attributes: JSON.parse(r.attributes) as Attributes,
    }));
  }

  /**
   * Writes a newer version of the file's latest live row with `deleted` set and, when given,
   * other columns replaced. False when the file is not live.
   */
  private async rewriteLatest(
    scope: VectorScope,
    fileId: string,
    deleted: 'true' | 'false',
    replace: { attributes: string; attr_string: object; attr_number: object; attr_bool: object } | null,
  ): Promise<boolean> {
    const values: Record<string, unknown> = {
      ...scopeParams(scope),
      file: fileId,
      version: newGeneration().toString(),
    };
    let columns = 'attributes, attr_string, attr_number, attr_bool';
    if (replace) {
      Object.assign(values, replace);
      columns = `{attributes:String}, {attr_string:Map(String, String)}, {attr_number:Map(String, Float64)},
        {attr_bool:Map(String, Bool)}`;
    }
    const [live] = await this.analytics.query<{ n: string }>(
      `SELECT count() AS n FROM (${LATEST_FILES}) WHERE file_id = {file:String} AND NOT deleted`,
      values,
    );
    if (Number(live?.n ?? 0) === 0) return false;
    await this.analytics.command(
      `INSERT INTO ${FILES_TABLE}
         (org_id, project_id, vector_store_id, file_id, generation, version, deleted, chunk_count,
          token_count, attributes, attr_string, attr_number, attr_bool, updated_at)
       SELECT {org:String}, {project:String}, {store:String}, file_id, generation, {version:UInt64}, ${deleted},
         chunk_count, token_count, ${columns}, now64(3)
       FROM (${LATEST_FILES}) WHERE file_id = {file:String} AND NOT deleted`,
      values,
    );
    return true;
  }
}
