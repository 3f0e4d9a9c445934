-- Vector stores (SPEC 4.1 /v1/vector_stores, "Hosted file_search"): the chunks of attached files
-- with their embeddings, and one row per attached file that says which chunks are live
-- (src/vectors/store.ts).
--
-- Every read is scoped by org_id, project_id and vector_store_id, the leading columns of both
-- sorting keys: a store's rows are one contiguous key range, so a search reads that store's
-- granules only, whatever else the table holds.
--
-- Chunks are never visible on their own: a search joins them to the file's latest row in
-- vector_store_files on (file_id, generation). An attach inserts its chunks under a fresh
-- generation and then publishes the file row, so a half-written attach is never searched; a detach
-- or a store deletion writes a newer file row with deleted = 1, which hides every chunk of that
-- generation at once. The chunk rows are removed later (purge), off the request path.
--
-- Search is exact cosine similarity over the store's chunks, or for large stores two-stage: a scan
-- of `signature` (one sign bit per dimension, 32x smaller than the Float32 vectors) ranked by
-- Hamming distance, then exact cosine over the best candidates only. The signature is computed by
-- the engine from the embedding, so any dimension works and writers never send it.
-- Every statement is re-runnable (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS vector_chunks (
  org_id String,
  project_id String,
  vector_store_id String,
  file_id String,
  generation UInt64,
  chunk_index UInt32,
  text String CODEC(ZSTD(1)),
  token_count UInt32,
  -- Embedding floats do not compress: storing them plain saves decompression on every scan.
  embedding Array(Float32) CODEC(NONE),
  -- Sign bits packed into 64-bit words, written as 8 big-endian bytes each.
  signature String MATERIALIZED unhex(arrayStringConcat(arrayMap(w -> leftPad(hex(w), 16, '0'),
    arrayMap(c -> arraySum(c), arraySplit((x, i) -> i % 64 = 0,
      arrayMap((x, i) -> bitShiftLeft(toUInt64(x > 0), i % 64), embedding, range(length(embedding))),
      range(length(embedding))))))),
  inserted_at DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = MergeTree
ORDER BY (org_id, project_id, vector_store_id, file_id, generation, chunk_index)
-- Small granules: the second stage of a two-stage search reads whole granules around each
-- candidate, so 64 rows a granule keeps that read near the candidates themselves.
SETTINGS index_granularity = 64;

-- The latest row per (store, file) wins (version); attributes are the file's (OpenAI: at most 16
-- keys), kept as the caller's JSON for rendering and split by value type for filtering.
CREATE TABLE IF NOT EXISTS vector_store_files (
  org_id String,
  project_id String,
  vector_store_id String,
  file_id String,
  generation UInt64,
  version UInt64,
  deleted Bool,
  chunk_count UInt32,
  token_count UInt64,
  attributes String,
  attr_string Map(String, String),
  attr_number Map(String, Float64),
  attr_bool Map(String, Bool),
  updated_at DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, project_id, vector_store_id, file_id);
