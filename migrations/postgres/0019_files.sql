-- Files of the primary edge (SPEC 4.1 /v1/files: service-owned artifact storage), kept by
-- src/files/store.ts. A data-plane table, not a read model: an upload writes its row directly, so
-- the next request on any gateway process sees it (read-your-writes on one database).
--
-- The bytes live in the object store under <org_id>/files/<project_id>/<id> (object_key is the part
-- after the org). Every read names the org and the project, so another project's id is the same
-- 404 as an id that never existed.
--
-- status: `uploading` while the bytes stream in (the row exists first so an upload cut by a crash
-- can be found and its object removed); `processed` once stored and validated, the only rows the API
-- shows; `deleting` once deleted or expired, until its object is gone (then the row is deleted).
--
-- The id is `file-` then 10 characters of creation time in milliseconds and 16 random ones, all in
-- an alphabet that sorts like the time, and created_at is that same millisecond: (created_at, id)
-- is the list order, and an `after` cursor is a position even for an id that is gone.
CREATE TABLE files (
  id           text COLLATE "C" PRIMARY KEY,
  org_id       text NOT NULL,
  project_id   text NOT NULL,
  api_key_id   text NOT NULL,
  status       text NOT NULL CHECK (status IN ('uploading', 'processed', 'deleting')),
  purpose      text,
  filename     text NOT NULL,
  content_type text NOT NULL,
  bytes        bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
  blake3       text CHECK (blake3 ~ '^[0-9a-f]{64}$'),
  object_key   text NOT NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz,
  CHECK (status <> 'processed' OR (purpose IS NOT NULL AND blake3 IS NOT NULL))
);

-- GET /v1/files pages in (created_at, id) order either way, with or without a purpose filter.
CREATE INDEX files_list ON files (org_id, project_id, created_at, id) WHERE status = 'processed';
CREATE INDEX files_list_by_purpose ON files (org_id, project_id, purpose, created_at, id)
  WHERE status = 'processed';
-- The sweep: files past their expiry, uploads abandoned by a process that died, deletions to finish.
CREATE INDEX files_expiring ON files (expires_at) WHERE status = 'processed' AND expires_at IS NOT NULL;
CREATE INDEX files_unfinished ON files (status, created_at) WHERE status <> 'processed';
