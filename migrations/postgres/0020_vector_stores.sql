-- Vector stores of the primary edge (SPEC 4.1 /v1/vector_stores), kept by src/vector-stores/store.ts.
-- Data-plane tables like `files`: written in place, never projected, so what one request writes the
-- next request sees on any gateway process (read-your-writes on one database). Every read names the
-- org and the project: another project's id is the same 404 as an id that never existed.
--
-- The chunks and their vectors live in the analytics store (src/vectors), which publishes a file's
-- chunks of one generation and hides them again; these tables are the authority it is kept in step
-- with, and a search shows only hits of files that are `completed` here.

-- status: `active`, or `deleting` from the DELETE until the sweep has hidden its chunks in the
-- vector index (then the row goes, and its files with it). The id is `vs_` then 10 characters of
-- creation time in milliseconds and 16 random ones, sorting like the time, and created_at is that
-- same millisecond: (created_at, id) is the list order and an `after`/`before` cursor is a position.
CREATE TABLE vector_stores (
  id                 text COLLATE "C" PRIMARY KEY,
  org_id             text NOT NULL,
  project_id         text NOT NULL,
  api_key_id         text NOT NULL,
  status             text NOT NULL CHECK (status IN ('active', 'deleting')),
  name               text NOT NULL DEFAULT '',
  description        text,
  -- Fixed for the store's life: every chunk and every query of the store is embedded with it.
  embedding_model    text NOT NULL,
  metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
  expires_after_days integer CHECK (expires_after_days BETWEEN 1 AND 365),
  created_at         timestamptz NOT NULL,
  last_active_at     timestamptz NOT NULL
);

CREATE INDEX vector_stores_list ON vector_stores (org_id, project_id, created_at, id) WHERE status = 'active';
CREATE INDEX vector_stores_deleting ON vector_stores (created_at) WHERE status = 'deleting';

-- A file attached to a store, and the durable job that indexes it. The row is `in_progress` from
-- the attach until a worker marks it `completed` or `failed`; `detached` rows stay as positions for
-- list cursors until the store goes (a later attach of the same file reuses the row).
--
-- The job: a worker claims a due row (in_progress, lease_until null or past) by setting a fresh
-- `generation` and `lease_until`, renews the lease while it works, and tags every chunk it writes
-- with that generation. Only the claim that still holds the row may complete it; a worker that
-- finds its claim gone (detached, store deleted, lease taken over after a stall) hides its
-- generation in the index. A process that dies leaves the lease to run out; any process's sweep
-- claims the row again under a new generation.
CREATE TABLE vector_store_files (
  vector_store_id       text COLLATE "C" NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
  file_id               text COLLATE "C" NOT NULL,
  org_id                text NOT NULL,
  project_id            text NOT NULL,
  -- The key that attached the file: its embeddings requests are recorded and priced as this key's.
  api_key_id            text NOT NULL,
  status                text NOT NULL
    CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled', 'detached')),
  filename              text NOT NULL,
  attributes            jsonb NOT NULL DEFAULT '{}'::jsonb,
  max_chunk_size_tokens integer NOT NULL CHECK (max_chunk_size_tokens BETWEEN 100 AND 4096),
  chunk_overlap_tokens  integer NOT NULL CHECK (chunk_overlap_tokens >= 0),
  -- Of the completed generation: bytes of chunk text (OpenAI's usage_bytes), chunks, tokens.
  usage_bytes           bigint NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
  chunk_count           integer NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
  token_count           bigint NOT NULL DEFAULT 0 CHECK (token_count >= 0),
  last_error_code       text CHECK (last_error_code IN ('server_error', 'unsupported_file', 'invalid_file')),
  last_error_message    text,
  created_at            timestamptz NOT NULL,
  -- A decimal UInt64, fresh for every claim: the index's generation of the chunks it writes.
  generation            text CHECK (generation ~ '^[0-9]{1,20}$'),
  lease_until           timestamptz,
  attempts              integer NOT NULL DEFAULT 0,
  PRIMARY KEY (vector_store_id, file_id),
  CHECK (status <> 'completed' OR generation IS NOT NULL)
);

-- GET /v1/vector_stores/{id}/files pages in (created_at, file_id) order, with or without a status filter.
CREATE INDEX vector_store_files_list ON vector_store_files (vector_store_id, created_at, file_id)
  WHERE status <> 'detached';
CREATE INDEX vector_store_files_by_status ON vector_store_files (vector_store_id, status, created_at, file_id);
-- The attach workers: rows in progress whose lease is free or has run out.
CREATE INDEX vector_store_files_due ON vector_store_files (lease_until NULLS FIRST, created_at)
  WHERE status = 'in_progress';
