import type { Pool } from '../events/postgres/pool.js';

export interface Feedback {
  request_id: string;
  org_id: string;
  author: string;
  rating: 'up' | 'down';
  comment: string | null;
}

/** One verdict per author and request: giving feedback again replaces the earlier one. */
export const recordFeedback = async (pool: Pool, f: Feedback, now: Date) => {
  const { rows } = await pool.query<{ created_at: Date; updated_at: Date }>(
    `INSERT INTO query_request_feedback (request_id, org_id, author, rating, comment, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6)
     ON CONFLICT (org_id, request_id, author)
     DO UPDATE SET rating = EXCLUDED.rating, comment = EXCLUDED.comment, updated_at = EXCLUDED.updated_at
     RETURNING created_at, updated_at`,
    [f.request_id, f.org_id, f.author, f.rating, f.comment, now],
  );
  return {
    ...f,
    created_at: rows[0]!.created_at.toISOString(),
    updated_at: rows[0]!.updated_at.toISOString(),
  };
};
