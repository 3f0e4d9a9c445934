import { type Pool, type PoolClient, withTransaction } from '../events/postgres/pool.js';
import type {
  Attributes,
  ChunkingStrategy,
  ErrorCode,
  FileCounts,
  FileStatus,
  Metadata,
  StoredVectorStore,
  StoredVectorStoreFile,
  VectorStoreScope,
} from './model.js';

/**
 * The `vector_stores` and `vector_store_files` tables (migrations/postgres/0020_vector_stores.sql).
 * Every read and change of the API names the organization and the project, so a row of another
 * project answers like a row that does not exist. The attach jobs on the same rows are jobs.ts.
 */

/** A list position: the (created_at, id) of an item, strictly after or before which a page starts. */
export interface Position {
  id: string;
  createdAt: Date;
}

export interface PageQuery {
  /** At most this many items (1..100). */
  limit: number;
  order: 'asc' | 'desc';
  /** Items strictly after this position in `order`. */
  after: Position | null;
  /** Items strictly before this position in `order`, the nearest ones. */
  before: Position | null;
}

export interface FilePageQuery extends PageQuery {
  /** Only files with this status; null for all. */
  status: FileStatus | null;
  /** Only the files of this batch of the store (file_batches/{id}/files). */
  batchId?: string;
}

/** A batch as its row holds it, with its files counted as they are now. */
export interface StoredFileBatch {
  id: string;
  vectorStoreId: string;
  createdAt: Date;
  cancelledAt: Date | null;
  fileCounts: FileCounts;
}

type Scope = Pick<VectorStoreScope, 'orgId' | 'projectId'>;

interface StoreRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  description: string | null;
  embedding_model: string;
  metadata: Metadata;
  expires_after_days: number | null;
  created_at: Date;
  last_active_at: Date;
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  usage_bytes: string | number;
}

interface FileRow {
  vector_store_id: string;
  file_id: string;
  org_id: string;
  project_id: string;
  api_key_id: string;
  status: FileStatus;
  filename: string;
  attributes: Attributes;
  max_chunk_size_tokens: number;
  chunk_overlap_tokens: number;
  usage_bytes: string | number;
  last_error_code: ErrorCode | null;
  last_error_message: string | null;
  created_at: Date;
  generation: string | null;
}

const STORE_COLUMNS =
  's.id, s.org_id, s.project_id, s.name, s.description, s.embedding_model, s.metadata, s.expires_after_days, s.created_at, s.last_active_at';
/** A store's file counts and usage, read with the store `alias` (one index range of its files). */
const countsOf = (alias: string) => `LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE f.status = 'in_progress') AS in_progress,
           count(*) FILTER (WHERE f.status = 'completed') AS completed,
           count(*) FILTER (WHERE f.status = 'failed') AS failed,
           count(*) FILTER (WHERE f.status = 'cancelled') AS cancelled,
           COALESCE(sum(f.usage_bytes) FILTER (WHERE f.status = 'completed'), 0) AS usage_bytes
      FROM vector_store_files f
     WHERE f.vector_store_id = ${alias}.id AND f.status <> 'detached') c ON true`;
const FILE_COLUMNS =
  'f.vector_store_id, f.file_id, f.org_id, f.project_id, f.api_key_id, f.status, f.filename, f.attributes, f.max_chunk_size_tokens, f.chunk_overlap_tokens, f.usage_bytes, f.last_error_code, f.last_error_message, f.created_at, f.generation';
/** The store of a file row, active and the caller's. */
const OWN_ACTIVE_STORE = `EXISTS (SELECT 1 FROM vector_stores s WHERE s.id = f.vector_store_id
  AND s.org_id = f.org_id AND s.project_id = f.project_id AND s.status = 'active')`;

const storeOf = (r: StoreRow): StoredVectorStore => {
  const counts = {
    in_progress: Number(r.in_progress),
    completed: Number(r.completed),
    failed: Number(r.failed),
    cancelled: Number(r.cancelled),
  };
  return {
    id: r.id,
    orgId: r.org_id,
    projectId: r.project_id,
    name: r.name,
    description: r.description,
    embeddingModel: r.embedding_model,
    metadata: r.metadata,
    expiresAfterDays: r.expires_after_days,
    createdAt: r.created_at,
    lastActiveAt: r.last_active_at,
    usageBytes: Number(r.usage_bytes),
    fileCounts: {
      ...counts,
      total: counts.in_progress + counts.completed + counts.failed + counts.cancelled,
    },
  };
};

const fileOf = (r: FileRow): StoredVectorStoreFile => ({
  vectorStoreId: r.vector_store_id,
  fileId: r.file_id,
  orgId: r.org_id,
  projectId: r.project_id,
  apiKeyId: r.api_key_id,
  status: r.status,
  filename: r.filename,
  attributes: r.attributes,
  chunking: { maxChunkSizeTokens: r.max_chunk_size_tokens, chunkOverlapTokens: r.chunk_overlap_tokens },
  usageBytes: Number(r.usage_bytes),
  lastError:
    r.last_error_code === null ? null : { code: r.last_error_code, message: r.last_error_message ?? '' },
  createdAt: r.created_at,
  generation: r.generation,
});

/**
 * The keyset condition and order of one page: `after` and `before` are strict bounds in the list's
 * order; a page asked only `before` a position is read backwards from it (the nearest items) and
 * turned around by the caller. The SQL text depends on which bounds are present, never on a value.
 */
const keyset = (
  q: PageQuery,
  values: unknown[],
  columns: { time: string; id: string },
): { where: string[]; orderBy: string; dir: 'ASC' | 'DESC'; backwards: boolean } => {
  const where: string[] = [];
  const bound = (p: Position, later: boolean) => {
    values.push(p.createdAt, p.id);
    const n = values.length;
    where.push(`(${columns.time}, ${columns.id}) ${later ? '>' : '<'} ($${n - 1}::timestamptz, $${n}::text)`);
  };
  const ascending = q.order === 'asc';
  if (q.after) bound(q.after, ascending);
  if (q.before) bound(q.before, !ascending);
  const backwards = q.before !== null && q.after === null;
  const dir = ascending !== backwards ? 'ASC' : 'DESC';
  return { where, orderBy: `${columns.time} ${dir}, ${columns.id} ${dir}`, dir, backwards };
};

const pageFrom = <R, T>(rows: R[], q: PageQuery, backwards: boolean, of: (r: R) => T) => {
  const page = rows.slice(0, q.limit).map(of);
  if (backwards) page.reverse();
  return { items: page, hasMore: rows.length > q.limit };
};

export interface NewStore {
  id: string;
  scope: VectorStoreScope;
  name: string;
  description: string | null;
  embeddingModel: string;
  metadata: Metadata;
  expiresAfterDays: number | null;
  createdAt: Date;
}

export interface NewAttachment {
  scope: VectorStoreScope;
  vectorStoreId: string;
  fileId: string;
  filename: string;
  attributes: Attributes;
  chunking: ChunkingStrategy;
  createdAt: Date;
}

/**
 * Attaches a file in progress: a new row, or a detached or cancelled one attached again on its old
 * row. No row comes back when the file is attached already (as it is) or the store is not the
 * caller's active store.
 */
const attachRow = (db: Pool | PoolClient, a: NewAttachment) =>
  db.query<FileRow>(
    `INSERT INTO vector_store_files AS f (vector_store_id, file_id, org_id, project_id, api_key_id, status,
       filename, attributes, max_chunk_size_tokens, chunk_overlap_tokens, created_at)
     SELECT s.id, $2, s.org_id, s.project_id, $4, 'in_progress', $5, $6, $7, $8, $9
       FROM vector_stores s
      WHERE s.id = $1 AND s.org_id = $3 AND s.project_id = $10 AND s.status = 'active'
     ON CONFLICT (vector_store_id, file_id) DO UPDATE SET
       api_key_id = EXCLUDED.api_key_id, status = 'in_progress', filename = EXCLUDED.filename,
       attributes = EXCLUDED.attributes, max_chunk_size_tokens = EXCLUDED.max_chunk_size_tokens,
       chunk_overlap_tokens = EXCLUDED.chunk_overlap_tokens, usage_bytes = 0, chunk_count = 0,
       token_count = 0, last_error_code = NULL,
       last_error_message = NULL, created_at = EXCLUDED.created_at, generation = NULL,
       lease_until = NULL, attempts = 0
      WHERE f.status IN ('detached', 'cancelled')
     RETURNING ${FILE_COLUMNS}`,
    [
      a.vectorStoreId,
      a.fileId,
      a.scope.orgId,
      a.scope.apiKeyId,
      a.filename,
      JSON.stringify(a.attributes),
      a.chunking.maxChunkSizeTokens,
      a.chunking.chunkOverlapTokens,
      a.createdAt,
      a.scope.projectId,
    ],
  );

export class VectorStoreTables {
  constructor(private readonly pool: Pool) {}

  // --- stores ---

  async createStore(s: NewStore): Promise<void> {
    await this.pool.query(
      `INSERT INTO vector_stores (id, org_id, project_id, api_key_id, status, name, description,
         embedding_model, metadata, expires_after_days, created_at, last_active_at)
       VALUES ($1, $2, $3, $4, 'active', $5, $6, $7, $8, $9, $10, $10)`,
      [
        s.id,
        s.scope.orgId,
        s.scope.projectId,
        s.scope.apiKeyId,
        s.name,
        s.description,
        s.embeddingModel,
        JSON.stringify(s.metadata),
        s.expiresAfterDays,
        s.createdAt,
      ],
    );
  }

  async getStore(scope: Scope, id: string): Promise<StoredVectorStore | null> {
    const { rows } = await this.pool.query<StoreRow>(
      `SELECT ${STORE_COLUMNS}, c.* FROM vector_stores s ${countsOf('s')}
        WHERE s.id = $1 AND s.org_id = $2 AND s.project_id = $3 AND s.status = 'active'`,
      [id, scope.orgId, scope.projectId],
    );
    return rows[0] ? storeOf(rows[0]) : null;
  }

  /** One page of a project's stores, served by vector_stores_list in either direction. */
  async listStores(scope: Scope, q: PageQuery): Promise<{ items: StoredVectorStore[]; hasMore: boolean }> {
    const values: unknown[] = [scope.orgId, scope.projectId];
    const k = keyset(q, values, { time: 's.created_at', id: 's.id' });
    values.push(q.limit + 1);
    const where = ['s.org_id = $1', 's.project_id = $2', `s.status = 'active'`, ...k.where];
    const { rows } = await this.pool.query<StoreRow>(
      `SELECT p.*, c.* FROM (
         SELECT ${STORE_COLUMNS} FROM vector_stores s WHERE ${where.join(' AND ')}
          ORDER BY ${k.orderBy} LIMIT $${values.length}) p
       ${countsOf('p')}
       ORDER BY p.created_at ${k.dir}, p.id ${k.dir}`,
      values,
    );
    return pageFrom(rows, q, k.backwards, storeOf);
  }

  /** Changes what is given (null expiry removes it); null when the store is not the caller's. */
  async updateStore(
    scope: Scope,
    id: string,
    patch: { name?: string; expiresAfterDays?: number | null; metadata?: Metadata },
  ): Promise<boolean> {
    const values: unknown[] = [id, scope.orgId, scope.projectId];
    const sets: string[] = [];
    if (patch.name !== undefined) {
      values.push(patch.name);
      sets.push(`name = $${values.length}`);
    }
    if (patch.expiresAfterDays !== undefined) {
      values.push(patch.expiresAfterDays);
      sets.push(`expires_after_days = $${values.length}`);
    }
    if (patch.metadata !== undefined) {
      values.push(JSON.stringify(patch.metadata));
      sets.push(`metadata = $${values.length}`);
    }
    const { rowCount } = await this.pool.query(
      `UPDATE vector_stores SET ${sets.length > 0 ? sets.join(', ') : 'id = id'}
        WHERE id = $1 AND org_id = $2 AND project_id = $3 AND status = 'active'`,
      values,
    );
    return (rowCount ?? 0) > 0;
  }

  /** The store was used (an attach, a search): its expiry counts from now. */
  async touch(scope: Scope, id: string, at: Date): Promise<void> {
    await this.pool.query(
      `UPDATE vector_stores SET last_active_at = greatest(last_active_at, $4)
        WHERE id = $1 AND org_id = $2 AND project_id = $3 AND status = 'active'`,
      [id, scope.orgId, scope.projectId, at],
    );
  }

  /** Takes a store out of the API at once (the first of two concurrent deletes wins). */
  async markStoreDeleting(scope: Scope, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE vector_stores SET status = 'deleting'
        WHERE id = $1 AND org_id = $2 AND project_id = $3 AND status = 'active'`,
      [id, scope.orgId, scope.projectId],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Stores marked deleting, oldest first: the sweep hides their chunks, then removes them. */
  async deletingStores(
    limit: number,
  ): Promise<{ orgId: string; projectId: string; vectorStoreId: string }[]> {
    const { rows } = await this.pool.query<{ id: string; org_id: string; project_id: string }>(
      `SELECT id, org_id, project_id FROM vector_stores WHERE status = 'deleting' ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ orgId: r.org_id, projectId: r.project_id, vectorStoreId: r.id }));
  }

  /** Removes stores marked deleting, their files' rows with them. */
  async removeStores(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(`DELETE FROM vector_stores WHERE id = ANY($1::text[]) AND status = 'deleting'`, [
      ids,
    ]);
  }

  // --- files of a store ---

  /**
   * Attaches a file in progress, or finds it attached already (`created` false: the row as it is).
   * A file detached before is attached again on its old row. Null when the store is not the
   * caller's active store.
   */
  async attach(a: NewAttachment): Promise<{ file: StoredVectorStoreFile; created: boolean } | null> {
    const { rows } = await attachRow(this.pool, a);
    if (rows[0]) return { file: fileOf(rows[0]), created: true };
    const existing = await this.getFile(a.scope, a.vectorStoreId, a.fileId);
    return existing ? { file: existing, created: false } : null;
  }

  async getFile(scope: Scope, vectorStoreId: string, fileId: string): Promise<StoredVectorStoreFile | null> {
    const { rows } = await this.pool.query<FileRow>(
      `SELECT ${FILE_COLUMNS} FROM vector_store_files f
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.org_id = $3 AND f.project_id = $4
          AND f.status <> 'detached' AND ${OWN_ACTIVE_STORE}`,
      [vectorStoreId, fileId, scope.orgId, scope.projectId],
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /**
   * Where a file stands in its store's list (its attach time), detached files included, so a
   * cursor stays a position when its file is detached between two pages; null for any other id.
   */
  async filePosition(scope: Scope, vectorStoreId: string, fileId: string): Promise<Position | null> {
    const { rows } = await this.pool.query<{ created_at: Date }>(
      `SELECT f.created_at FROM vector_store_files f
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.org_id = $3 AND f.project_id = $4`,
      [vectorStoreId, fileId, scope.orgId, scope.projectId],
    );
    return rows[0] ? { id: fileId, createdAt: rows[0].created_at } : null;
  }

  /** One page of a store's files (the caller has checked the store is its own). */
  async listFiles(
    scope: Scope,
    vectorStoreId: string,
    q: FilePageQuery,
  ): Promise<{ items: StoredVectorStoreFile[]; hasMore: boolean }> {
    const values: unknown[] = [vectorStoreId, scope.orgId, scope.projectId];
    const where = ['f.vector_store_id = $1', 'f.org_id = $2', 'f.project_id = $3'];
    if (q.batchId !== undefined) {
      values.push(q.batchId);
      where.push(`EXISTS (SELECT 1 FROM vector_store_file_batch_files b
        WHERE b.batch_id = $${values.length} AND b.vector_store_id = f.vector_store_id AND b.file_id = f.file_id)`);
    }
    if (q.status === null) where.push(`f.status <> 'detached'`);
    else {
      values.push(q.status);
      where.push(`f.status = $${values.length}`);
    }
    const k = keyset(q, values, { time: 'f.created_at', id: 'f.file_id' });
    values.push(q.limit + 1);
    const { rows } = await this.pool.query<FileRow>(
      `SELECT ${FILE_COLUMNS} FROM vector_store_files f WHERE ${[...where, ...k.where].join(' AND ')}
        ORDER BY ${k.orderBy} LIMIT $${values.length}`,
      values,
    );
    return pageFrom(rows, q, k.backwards, fileOf);
  }

  async updateAttributes(
    scope: Scope,
    vectorStoreId: string,
    fileId: string,
    attributes: Attributes,
  ): Promise<StoredVectorStoreFile | null> {
    const { rows } = await this.pool.query<FileRow>(
      `UPDATE vector_store_files f SET attributes = $5
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.org_id = $3 AND f.project_id = $4
          AND f.status <> 'detached' AND ${OWN_ACTIVE_STORE}
       RETURNING ${FILE_COLUMNS}`,
      [vectorStoreId, fileId, scope.orgId, scope.projectId, JSON.stringify(attributes)],
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /**
   * Detaches a file: gone from every read and search at once. Returns the generation whose chunks
   * to hide (null when none was written yet), or undefined when the file is not attached.
   */
  async detach(scope: Scope, vectorStoreId: string, fileId: string): Promise<string | null | undefined> {
    const { rows } = await this.pool.query<{ generation: string | null }>(
      `UPDATE vector_store_files f SET status = 'detached', lease_until = NULL, usage_bytes = 0
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.org_id = $3 AND f.project_id = $4
          AND f.status <> 'detached' AND ${OWN_ACTIVE_STORE}
       RETURNING f.generation`,
      [vectorStoreId, fileId, scope.orgId, scope.projectId],
    );
    return rows[0] ? rows[0].generation : undefined;
  }

  /** The store's completed files: what a search may see, by generation, with their attributes. */
  async searchable(
    scope: Scope,
    vectorStoreId: string,
  ): Promise<{ fileId: string; generation: string; filename: string; attributes: Attributes }[]> {
    const { rows } = await this.pool.query<{
      file_id: string;
      generation: string;
      filename: string;
      attributes: Attributes;
    }>(
      `SELECT f.file_id, f.generation, f.filename, f.attributes FROM vector_store_files f
        WHERE f.vector_store_id = $1 AND f.org_id = $2 AND f.project_id = $3 AND f.status = 'completed'`,
      [vectorStoreId, scope.orgId, scope.projectId],
    );
    return rows.map((r) => ({
      fileId: r.file_id,
      generation: r.generation,
      filename: r.filename,
      attributes: r.attributes,
    }));
  }

  // --- file batches ---

  /**
   * A batch of files attached at once, in one transaction: the batch, each file attached (or found
   * attached) as `attach` does, and which files the batch names. False when the store is not the
   * caller's active store (nothing is written).
   */
  async createBatch(b: {
    id: string;
    scope: VectorStoreScope;
    vectorStoreId: string;
    files: readonly Omit<NewAttachment, 'scope' | 'vectorStoreId' | 'createdAt'>[];
    createdAt: Date;
  }): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `INSERT INTO vector_store_file_batches (id, vector_store_id, org_id, project_id, created_at)
         SELECT $1, s.id, s.org_id, s.project_id, $5 FROM vector_stores s
          WHERE s.id = $2 AND s.org_id = $3 AND s.project_id = $4 AND s.status = 'active'
          FOR SHARE OF s`,
        [b.id, b.vectorStoreId, b.scope.orgId, b.scope.projectId, b.createdAt],
      );
      if (!rowCount) return false;
      for (const f of b.files)
        await attachRow(client, {
          ...f,
          scope: b.scope,
          vectorStoreId: b.vectorStoreId,
          createdAt: b.createdAt,
        });
      await client.query(
        `INSERT INTO vector_store_file_batch_files (batch_id, vector_store_id, file_id)
         SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`,
        [b.id, b.vectorStoreId, b.files.map((f) => f.fileId)],
      );
      return true;
    });
  }

  /** The caller's batch of the caller's active store, its files counted as they are now. */
  async getBatch(scope: Scope, vectorStoreId: string, batchId: string): Promise<StoredFileBatch | null> {
    const { rows } = await this.pool.query<{
      id: string;
      vector_store_id: string;
      created_at: Date;
      cancelled_at: Date | null;
      in_progress: string;
      completed: string;
      failed: string;
      cancelled: string;
    }>(
      `SELECT b.id, b.vector_store_id, b.created_at, b.cancelled_at, c.*
         FROM vector_store_file_batches b
         JOIN vector_stores s ON s.id = b.vector_store_id AND s.org_id = b.org_id
          AND s.project_id = b.project_id AND s.status = 'active'
         LEFT JOIN LATERAL (
           SELECT count(*) FILTER (WHERE f.status = 'in_progress') AS in_progress,
                  count(*) FILTER (WHERE f.status = 'completed') AS completed,
                  count(*) FILTER (WHERE f.status = 'failed') AS failed,
                  count(*) FILTER (WHERE f.status = 'cancelled') AS cancelled
             FROM vector_store_file_batch_files bf
             JOIN vector_store_files f ON f.vector_store_id = bf.vector_store_id AND f.file_id = bf.file_id
            WHERE bf.batch_id = b.id AND f.status <> 'detached') c ON true
        WHERE b.id = $1 AND b.vector_store_id = $2 AND b.org_id = $3 AND b.project_id = $4`,
      [batchId, vectorStoreId, scope.orgId, scope.projectId],
    );
    const r = rows[0];
    if (!r) return null;
    const counts = {
      in_progress: Number(r.in_progress),
      completed: Number(r.completed),
      failed: Number(r.failed),
      cancelled: Number(r.cancelled),
    };
    return {
      id: r.id,
      vectorStoreId: r.vector_store_id,
      createdAt: r.created_at,
      cancelledAt: r.cancelled_at,
      fileCounts: {
        ...counts,
        total: counts.in_progress + counts.completed + counts.failed + counts.cancelled,
      },
    };
  }

  /**
   * Cancels a batch: its files still in progress end cancelled (a worker holding one finds its claim
   * gone). Returns the generations whose unpublished chunks to discard, by file; null when the batch
   * is not the caller's.
   */
  async cancelBatch(
    scope: Scope,
    vectorStoreId: string,
    batchId: string,
    at: Date,
  ): Promise<{ fileId: string; generation: string }[] | null> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE vector_store_file_batches b SET cancelled_at = COALESCE(b.cancelled_at, $5)
          WHERE b.id = $1 AND b.vector_store_id = $2 AND b.org_id = $3 AND b.project_id = $4
            AND EXISTS (SELECT 1 FROM vector_stores s WHERE s.id = b.vector_store_id
              AND s.org_id = b.org_id AND s.project_id = b.project_id AND s.status = 'active')`,
        [batchId, vectorStoreId, scope.orgId, scope.projectId, at],
      );
      if (!rowCount) return null;
      const { rows } = await client.query<{ file_id: string; generation: string | null }>(
        `UPDATE vector_store_files f SET status = 'cancelled', lease_until = NULL
           FROM vector_store_file_batch_files bf
          WHERE bf.batch_id = $1 AND f.vector_store_id = bf.vector_store_id AND f.file_id = bf.file_id
            AND f.status = 'in_progress'
         RETURNING f.file_id, f.generation`,
        [batchId],
      );
      return rows.flatMap((r) =>
        r.generation === null ? [] : [{ fileId: r.file_id, generation: r.generation }],
      );
    });
  }
}
