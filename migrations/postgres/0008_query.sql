-- Thumbs-style feedback on request rows (SPEC 4.5 POST /api/requests/:request_id/feedback).
-- The request itself lives in the analytics store; org_id is kept so every read stays tenant-scoped.
CREATE TABLE IF NOT EXISTS query_request_feedback (
  org_id      text NOT NULL,
  request_id  text NOT NULL,
  -- `user:<id>` for a session or developer token, `admin` for the platform administrator.
  author      text NOT NULL,
  rating      text NOT NULL CHECK (rating IN ('up', 'down')),
  comment     text,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (org_id, request_id, author)
);
