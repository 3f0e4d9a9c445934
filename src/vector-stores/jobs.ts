import type { Pool } from '../events/postgres/pool.js';
import type { Attributes, ChunkingStrategy, ErrorCode, FileStatus } from './model.js';

/**
 * The attach jobs (worker.ts) on the rows of `vector_store_files` (migrations/postgres/
 * 0020_vector_stores.sql): claims with a lease, renewed while a worker works, and the end of each
 * claim. The attach workers of every process share them; a row is named by its store, file and the
 * generation of the claim, so a claim that lost the row (detached, store deleted, taken over after
 * its lease ran out) changes nothing.
 */

/** A row a worker has claimed: what it needs to index the file, under its own generation. */
export interface Claim {
  orgId: string;
  projectId: string;
  apiKeyId: string;
  vectorStoreId: string;
  fileId: string;
  filename: string;
  chunking: ChunkingStrategy;
  embeddingModel: string;
  generation: string;
  /** The generation of an earlier claim that did not finish (its process died or stalled), if any. */
  previousGeneration: string | null;
  /** Claims of this row so far, this one included. */
  attempts: number;
  /** Why the last claim gave the row back (a failure that may pass), if one did. */
  lastReason: string | null;
}

export type JobRef = Pick<Claim, 'vectorStoreId' | 'fileId' | 'generation'>;

export class AttachJobs {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims up to `limit` due rows (in progress, lease free or run out, store active) for
   * `leaseSeconds`, each under a fresh generation. Rows another process is claiming are skipped.
   */
  async claim(limit: number, leaseSeconds: number): Promise<Claim[]> {
    const { rows } = await this.pool.query<{
      org_id: string;
      project_id: string;
      api_key_id: string;
      vector_store_id: string;
      file_id: string;
      filename: string;
      max_chunk_size_tokens: number;
      chunk_overlap_tokens: number;
      embedding_model: string;
      generation: string;
      previous_generation: string | null;
      attempts: number;
      last_error_message: string | null;
    }>(
      `WITH due AS (
         SELECT f.vector_store_id, f.file_id, f.generation AS previous_generation, s.embedding_model
           FROM vector_store_files f JOIN vector_stores s ON s.id = f.vector_store_id AND s.status = 'active'
          WHERE f.status = 'in_progress' AND (f.lease_until IS NULL OR f.lease_until < now())
          ORDER BY f.lease_until NULLS FIRST, f.created_at
          LIMIT $1
          FOR UPDATE OF f SKIP LOCKED)
       UPDATE vector_store_files f
          SET generation = (floor(random() * 9007199254740990) + 1)::bigint::text,
              lease_until = now() + make_interval(secs => $2), attempts = f.attempts + 1
         FROM due
        WHERE f.vector_store_id = due.vector_store_id AND f.file_id = due.file_id
       RETURNING f.org_id, f.project_id, f.api_key_id, f.vector_store_id, f.file_id, f.filename,
         f.max_chunk_size_tokens, f.chunk_overlap_tokens, due.embedding_model, f.generation,
         due.previous_generation, f.attempts, f.last_error_message`,
      [limit, leaseSeconds],
    );
    return rows.map((r) => ({
      orgId: r.org_id,
      projectId: r.project_id,
      apiKeyId: r.api_key_id,
      vectorStoreId: r.vector_store_id,
      fileId: r.file_id,
      filename: r.filename,
      chunking: { maxChunkSizeTokens: r.max_chunk_size_tokens, chunkOverlapTokens: r.chunk_overlap_tokens },
      embeddingModel: r.embedding_model,
      generation: r.generation,
      previousGeneration: r.previous_generation,
      attempts: r.attempts,
      lastReason: r.last_error_message,
    }));
  }

  /** Extends a claim's lease; false when the claim no longer holds the row (detached, store deleted, taken over). */
  async renew(job: JobRef, leaseSeconds: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE vector_store_files f SET lease_until = now() + make_interval(secs => $4)
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.generation = $3 AND f.status = 'in_progress'
          AND EXISTS (SELECT 1 FROM vector_stores s WHERE s.id = f.vector_store_id AND s.status = 'active')`,
      [job.vectorStoreId, job.fileId, job.generation, leaseSeconds],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Marks the claim's file completed; false when the claim no longer holds the row. */
  async complete(
    job: JobRef,
    done: { usageBytes: number; chunkCount: number; tokenCount: number },
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE vector_store_files f SET status = 'completed', usage_bytes = $4, chunk_count = $5, token_count = $6,
              lease_until = NULL, last_error_code = NULL, last_error_message = NULL
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.generation = $3 AND f.status = 'in_progress'
          AND EXISTS (SELECT 1 FROM vector_stores s WHERE s.id = f.vector_store_id AND s.status = 'active')`,
      [job.vectorStoreId, job.fileId, job.generation, done.usageBytes, done.chunkCount, done.tokenCount],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * What the index should show of one file: its completed generation with its attributes and
   * counts, or nothing (`live` null: not completed, detached, store deleted or gone).
   */
  async indexState(
    vectorStoreId: string,
    fileId: string,
  ): Promise<{
    status: FileStatus | 'detached' | null;
    generation: string | null;
    attributes: Attributes;
    live: { generation: string; attributes: Attributes; chunkCount: number; tokenCount: number } | null;
  }> {
    const { rows } = await this.pool.query<{
      status: FileStatus | 'detached';
      generation: string | null;
      attributes: Attributes;
      chunk_count: number;
      token_count: number;
      store_active: boolean;
    }>(
      `SELECT f.status, f.generation, f.attributes, f.chunk_count, f.token_count,
              EXISTS (SELECT 1 FROM vector_stores s WHERE s.id = f.vector_store_id AND s.status = 'active') AS store_active
         FROM vector_store_files f WHERE f.vector_store_id = $1 AND f.file_id = $2`,
      [vectorStoreId, fileId],
    );
    const r = rows[0];
    if (!r) return { status: null, generation: null, attributes: {}, live: null };
    const live =
      r.status === 'completed' && r.store_active && r.generation !== null
        ? {
            generation: r.generation,
            attributes: r.attributes,
            chunkCount: r.chunk_count,
            tokenCount: Number(r.token_count),
          }
        : null;
    return {
      status: r.store_active ? r.status : 'detached',
      generation: r.generation,
      attributes: r.attributes,
      live,
    };
  }

  /** Fails the file for good with `last_error`; false when the claim no longer holds the row. */
  async fail(job: JobRef, code: ErrorCode, message: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE vector_store_files f SET status = 'failed', lease_until = NULL, last_error_code = $4,
              last_error_message = $5
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.generation = $3 AND f.status = 'in_progress'`,
      [job.vectorStoreId, job.fileId, job.generation, code, message],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Gives a claim back: the row is due again after `retrySeconds`. After a failure that may pass
   * the claim counts as an attempt; given back by a process that stops (`attempted` false), not.
   */
  async release(job: JobRef, retrySeconds: number, reason: string, attempted = true): Promise<void> {
    await this.pool.query(
      `UPDATE vector_store_files f SET lease_until = now() + make_interval(secs => $4), last_error_message = $5,
              attempts = f.attempts - $6
        WHERE f.vector_store_id = $1 AND f.file_id = $2 AND f.generation = $3 AND f.status = 'in_progress'`,
      [job.vectorStoreId, job.fileId, job.generation, retrySeconds, reason, attempted ? 0 : 1],
    );
  }
}
