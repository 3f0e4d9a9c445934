-- File batches of the vector stores (SPEC 4.1 /v1/vector_stores/{id}/file_batches, OpenAI's Vector
-- Store File Batches API), kept by src/vector-stores/store.ts beside 0020_vector_stores.sql.
--
-- A batch attaches many files at once: each file is an ordinary vector_store_files row (the same
-- attach job), and the batch names which rows it made or found, so its file counts and its file list
-- are those rows as they are now. A cancel sets cancelled_at and cancels the batch's files still in
-- progress. The id is `vsfb_` then 10 characters of creation time in milliseconds and 16 random
-- ones; like every vector store read, a batch is found only with its store, org and project.
CREATE TABLE vector_store_file_batches (
  id              text COLLATE "C" PRIMARY KEY,
  vector_store_id text COLLATE "C" NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
  org_id          text NOT NULL,
  project_id      text NOT NULL,
  created_at      timestamptz NOT NULL,
  cancelled_at    timestamptz
);

CREATE TABLE vector_store_file_batch_files (
  batch_id        text COLLATE "C" NOT NULL REFERENCES vector_store_file_batches (id) ON DELETE CASCADE,
  vector_store_id text COLLATE "C" NOT NULL,
  file_id         text COLLATE "C" NOT NULL,
  PRIMARY KEY (batch_id, file_id)
);
