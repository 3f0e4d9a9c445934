import type { Pool } from '../events/postgres/pool.js';
import type { FileScope, Purpose, StoredFile } from './model.js';

/**
 * The `files` table (migrations/postgres/0019_files.sql). Every read and change names the file's
 * organization and project: a row of another project is never read, so it answers like a row that
 * does not exist. Rows are written in place, never projected: what one request writes, the next
 * request sees, on any process of the database.
 */

export interface ListQuery {
  /** Only files with this purpose; null for all. */
  purpose: string | null;
  /** At most this many files (1..10000). */
  limit: number;
  order: 'asc' | 'desc';
  /** The cursor: files strictly after this position in `order`; null from the start. */
  after: { id: string; createdAt: Date } | null;
}

interface Row {
  id: string;
  org_id: string;
  project_id: string;
  purpose: Purpose;
  filename: string;
  content_type: string;
  bytes: number;
  blake3: string;
  object_key: string;
  created_at: Date;
  expires_at: Date | null;
}

const COLUMNS =
  'id, org_id, project_id, purpose, filename, content_type, bytes, blake3, object_key, created_at, expires_at';
/** The rows the API shows: stored and validated, not past their expiry (the sweep may lag). */
const SHOWN = `status = 'processed' AND (expires_at IS NULL OR expires_at > now())`;

const fileOf = (r: Row): StoredFile => ({
  id: r.id,
  orgId: r.org_id,
  projectId: r.project_id,
  purpose: r.purpose,
  filename: r.filename,
  contentType: r.content_type,
  bytes: Number(r.bytes),
  blake3: r.blake3,
  objectKey: r.object_key,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

/**
 * One page of a project's files, `limit + 1` rows asked so the caller knows whether more follow.
 * The SQL text depends only on which filters are present, never on a value: each shape is served by
 * an index on (org_id, project_id[, purpose], created_at, id), read forwards or backwards from the
 * cursor, with no sort and no scan of other projects' rows.
 */
export const listStatement = (
  scope: Pick<FileScope, 'orgId' | 'projectId'>,
  q: ListQuery,
): { text: string; values: unknown[] } => {
  const values: unknown[] = [scope.orgId, scope.projectId];
  const where = ['org_id = $1', 'project_id = $2', SHOWN];
  if (q.purpose !== null) {
    values.push(q.purpose);
    where.push(`purpose = $${values.length}`);
  }
  if (q.after) {
    values.push(q.after.createdAt, q.after.id);
    const n = values.length;
    where.push(`(created_at, id) ${q.order === 'desc' ? '<' : '>'} ($${n - 1}::timestamptz, $${n}::text)`);
  }
  values.push(q.limit + 1);
  const dir = q.order === 'desc' ? 'DESC' : 'ASC';
  return {
    text: `SELECT ${COLUMNS} FROM files WHERE ${where.join(' AND ')} ORDER BY created_at ${dir}, id ${dir} LIMIT $${values.length}`,
    values,
  };
};

export interface Reservation {
  id: string;
  scope: FileScope;
  filename: string;
  contentType: string;
  objectKey: string;
  createdAt: Date;
}

export class FileStore {
  constructor(private readonly pool: Pool) {}

  /** The row of an upload that has begun: invisible to the API until `finish`. */
  async reserve(r: Reservation): Promise<void> {
    await this.pool.query(
      `INSERT INTO files (id, org_id, project_id, api_key_id, status, filename, content_type, object_key, created_at)
       VALUES ($1, $2, $3, $4, 'uploading', $5, $6, $7, $8)`,
      [
        r.id,
        r.scope.orgId,
        r.scope.projectId,
        r.scope.apiKeyId,
        r.filename,
        r.contentType,
        r.objectKey,
        r.createdAt,
      ],
    );
  }

  /** Makes an upload a file; null when its reservation is gone (swept as abandoned). */
  async finish(
    id: string,
    scope: FileScope,
    f: { purpose: Purpose; bytes: number; blake3: string; expiresAt: Date | null },
  ): Promise<StoredFile | null> {
    const { rows } = await this.pool.query<Row>(
      `UPDATE files SET status = 'processed', purpose = $4, bytes = $5, blake3 = $6, expires_at = $7
        WHERE id = $1 AND org_id = $2 AND project_id = $3 AND status = 'uploading'
       RETURNING ${COLUMNS}`,
      [id, scope.orgId, scope.projectId, f.purpose, f.bytes, f.blake3, f.expiresAt],
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /** Forgets an upload that failed (its object is already removed). */
  async abandon(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM files WHERE id = $1 AND status = 'uploading'`, [id]);
  }

  /** Of `ids`, those the project's API shows (stored, not deleted, not expired). */
  async shown(scope: Pick<FileScope, 'orgId' | 'projectId'>, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT id FROM files WHERE org_id = $1 AND project_id = $2 AND id = ANY($3::text[]) AND ${SHOWN}`,
      [scope.orgId, scope.projectId, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  async get(scope: FileScope, id: string): Promise<StoredFile | null> {
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLUMNS} FROM files WHERE id = $1 AND org_id = $2 AND project_id = $3 AND ${SHOWN}`,
      [id, scope.orgId, scope.projectId],
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  async list(scope: FileScope, q: ListQuery): Promise<{ files: StoredFile[]; hasMore: boolean }> {
    const { rows } = await this.pool.query<Row>(listStatement(scope, q));
    return { files: rows.slice(0, q.limit).map(fileOf), hasMore: rows.length > q.limit };
  }

  /**
   * Takes a file out of the API at once (the first of two concurrent deletes wins, the other finds
   * nothing); its object and row are removed next, by the caller or else by `sweep`.
   */
  async markDeleting(scope: FileScope, id: string): Promise<StoredFile | null> {
    const { rows } = await this.pool.query<Row>(
      `UPDATE files SET status = 'deleting'
        WHERE id = $1 AND org_id = $2 AND project_id = $3 AND ${SHOWN}
       RETURNING ${COLUMNS}`,
      [id, scope.orgId, scope.projectId],
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /** Removes rows marked deleting whose objects are gone. */
  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(`DELETE FROM files WHERE id = ANY($1::text[]) AND status = 'deleting'`, [ids]);
  }

  /**
   * Marks for deletion the files past their expiry and the uploads begun more than `staleSeconds`
   * ago that never finished (their process died); at most `limit` rows. Returns how many.
   */
  async retire(staleSeconds: number, limit: number): Promise<number> {
    // The condition is stated twice: the outer one is re-checked on a row that changed while this
    // waited for its lock (an upload that finished meanwhile is not retired).
    const due = `((status = 'processed' AND expires_at <= now())
               OR (status = 'uploading' AND created_at < now() - make_interval(secs => $1)))`;
    const { rowCount } = await this.pool.query(
      `UPDATE files SET status = 'deleting'
        WHERE id IN (SELECT id FROM files WHERE ${due} LIMIT $2) AND ${due}`,
      [staleSeconds, limit],
    );
    return rowCount ?? 0;
  }

  /** Rows marked deleting, oldest first: what the sweep still has to remove. */
  async deleting(limit: number): Promise<{ id: string; orgId: string; objectKey: string }[]> {
    const { rows } = await this.pool.query<{ id: string; org_id: string; object_key: string }>(
      `SELECT id, org_id, object_key FROM files WHERE status = 'deleting' ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, objectKey: r.object_key }));
  }
}
