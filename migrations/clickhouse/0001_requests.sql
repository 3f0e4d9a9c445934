-- Request analytics written by the ingest consumer (issue 11; SPEC 2.5, 6; src/ingest/rows.ts).
--
-- The bus delivers at least once, so every table a redelivered message reaches again is a
-- ReplacingMergeTree whose sorting key ends in request_id (and the line index for line tables):
-- a second copy of a row collapses into one at merge time, and readers that must count exactly
-- query with FINAL. The version column is ingested_at, so the surviving copy is the latest write,
-- whose body refs name the latest pack (older packs stay readable; they are merely unreferenced).
-- The key leads with org_id and the day so tenant- and time-scoped reads prune by key.
--
-- Money is Decimal(38, 18): the scale of src/lib/money.ts (atto-USD), so every decimal string the
-- pricing engine writes is stored exactly; ingest refuses (malformed_row) a value that would not fit.
-- batch_id names the flush that wrote a row: the durability read-back looks for exactly its own rows.
-- Every statement is re-runnable (IF NOT EXISTS): a migration interrupted half way runs again whole.

CREATE TABLE IF NOT EXISTS requests (
  request_id String,
  org_id String,
  project_id String,
  workspace_id String,
  api_key_id String,
  route LowCardinality(String),
  model_requested String,
  model_served LowCardinality(Nullable(String)),
  -- The provider lane (openai, azure, bedrock-gov, ...), which the billing-health evaluator groups by.
  provider LowCardinality(Nullable(String)),
  endpoint_id Nullable(String),
  provider_model_id Nullable(String),
  stream Bool,
  status LowCardinality(String),
  http_status UInt16,
  error_type LowCardinality(Nullable(String)),
  error_code Nullable(String),
  started_at DateTime64(3, 'UTC'),
  finished_at DateTime64(3, 'UTC'),
  latency_ms Float64,
  ttfb_ms Nullable(Float64),
  prompt_tokens UInt64,
  completion_tokens UInt64,
  total_tokens UInt64,
  cache_read_tokens UInt64,
  cache_write_tokens UInt64,
  reasoning_tokens Nullable(UInt64),
  audio_input_marker LowCardinality(String),
  audio_input_tokens Nullable(UInt64),
  audio_output_marker LowCardinality(String),
  audio_output_tokens Nullable(UInt64),
  has_audio Bool,
  input_image_tokens Nullable(UInt64),
  output_image_tokens Nullable(UInt64),
  total_cost_usd Decimal(38, 18),
  billing_status LowCardinality(String),
  billing_reason LowCardinality(Nullable(String)),
  billing_detail Nullable(String),
  rate_card_id Nullable(String),
  funding LowCardinality(Nullable(String)),
  session_id Nullable(String),
  end_user_id Nullable(String),
  full_tracing Bool,
  trace_source LowCardinality(String),
  -- Names and counts only, as the envelope carries them (JSON); never arguments.
  tool_summary String,
  tool_call_count UInt32,
  -- The attempt trail (SPEC 2.4 entries plus provider, endpoint, latency, outcome), JSON.
  attempts String,
  attempt_count UInt16,
  usage_line_count UInt16,
  cost_line_count UInt16,
  -- Body refs: empty pack key when the side was not captured. offset and length are the stored
  -- frame payload's exact byte range in the pack object (under the org's prefix); byte_count and
  -- blake3 describe the body itself, so a reader verifies what getRange returns.
  req_body_pack String,
  req_body_offset UInt64,
  req_body_length UInt64,
  req_body_byte_count UInt64,
  req_body_blake3 String,
  res_body_pack String,
  res_body_offset UInt64,
  res_body_length UInt64,
  res_body_byte_count UInt64,
  res_body_blake3 String,
  schema_version UInt8,
  batch_id String,
  ingested_at DateTime64(3, 'UTC'),
  INDEX requests_request_id request_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX requests_batch_id batch_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX requests_session_id session_id TYPE bloom_filter(0.01) GRANULARITY 4
) ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (org_id, toDate(started_at), request_id);

-- One row per usage line (metered quantity by meter and qualifiers).
CREATE TABLE IF NOT EXISTS request_usage_lines (
  request_id String,
  line_index UInt16,
  org_id String,
  project_id String,
  workspace_id String,
  api_key_id String,
  started_at DateTime64(3, 'UTC'),
  model_served LowCardinality(Nullable(String)),
  provider LowCardinality(Nullable(String)),
  endpoint_id Nullable(String),
  meter LowCardinality(String),
  modality LowCardinality(String),
  tier LowCardinality(String),
  cache_ttl LowCardinality(Nullable(String)),
  tool_type LowCardinality(Nullable(String)),
  quantity UInt64,
  batch_id String,
  ingested_at DateTime64(3, 'UTC'),
  INDEX usage_lines_request_id request_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX usage_lines_batch_id batch_id TYPE bloom_filter(0.01) GRANULARITY 4
) ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (org_id, toDate(started_at), request_id, line_index);

-- One row per cost line: exact unit price and amount, with the rate-card provenance that priced it.
CREATE TABLE IF NOT EXISTS request_cost_lines (
  request_id String,
  line_index UInt16,
  org_id String,
  project_id String,
  workspace_id String,
  api_key_id String,
  started_at DateTime64(3, 'UTC'),
  model_served LowCardinality(Nullable(String)),
  provider LowCardinality(Nullable(String)),
  endpoint_id Nullable(String),
  funding LowCardinality(Nullable(String)),
  meter LowCardinality(String),
  modality LowCardinality(String),
  tier LowCardinality(String),
  cache_ttl LowCardinality(Nullable(String)),
  tool_type LowCardinality(Nullable(String)),
  quantity UInt64,
  unit_price Decimal(38, 18),
  amount Decimal(38, 18),
  estimated Bool,
  -- rate_card or zero_rated; the rate_card fields are null for a zero-rated line, the rule otherwise.
  provenance_source LowCardinality(String),
  rate_card_id Nullable(String),
  rate_row_id Nullable(String),
  rate_card_revision Nullable(UInt32),
  -- As the rate card states them, kept as text so provenance is reproduced byte for byte.
  effective_from Nullable(String),
  effective_to Nullable(String),
  zero_rated_rule LowCardinality(Nullable(String)),
  batch_id String,
  ingested_at DateTime64(3, 'UTC'),
  INDEX cost_lines_request_id request_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX cost_lines_batch_id batch_id TYPE bloom_filter(0.01) GRANULARITY 4
) ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (org_id, toDate(started_at), request_id, line_index);

-- Per-minute dashboard rollup, fed by a materialized view on every insert into requests.
-- NOT A BILLING SOURCE: a redelivered message is inserted again and the view adds it again, so
-- this rollup may double count after redelivery (SPEC 6). Bills, wallets and exports read
-- requests / request_cost_lines with FINAL instead.
CREATE TABLE IF NOT EXISTS requests_per_minute (
  minute DateTime('UTC'),
  org_id String,
  workspace_id String,
  project_id String,
  provider LowCardinality(String),
  model_served LowCardinality(String),
  status LowCardinality(String),
  billing_status LowCardinality(String),
  requests UInt64,
  prompt_tokens UInt64,
  completion_tokens UInt64,
  total_tokens UInt64,
  total_cost_usd Decimal(38, 18),
  latency_ms_sum Float64
) ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (org_id, minute, workspace_id, project_id, provider, model_served, status, billing_status);

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_per_minute_mv TO requests_per_minute AS
SELECT
  toStartOfMinute(started_at) AS minute,
  org_id,
  workspace_id,
  project_id,
  ifNull(provider, '') AS provider,
  ifNull(model_served, '') AS model_served,
  status,
  billing_status,
  count() AS requests,
  sum(prompt_tokens) AS prompt_tokens,
  sum(completion_tokens) AS completion_tokens,
  sum(total_tokens) AS total_tokens,
  sum(total_cost_usd) AS total_cost_usd,
  sum(latency_ms) AS latency_ms_sum
FROM requests
GROUP BY minute, org_id, workspace_id, project_id, provider, model_served, status, billing_status;
