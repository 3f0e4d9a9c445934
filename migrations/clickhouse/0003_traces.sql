-- Trace records (SPEC 2.1-2.3, 4.3, 6), written by the trace projector from svc.traces.* and by the
-- ingest worker for the gateway's own LLM spans (src/projections/traces/).
--
-- Redelivery and re-export write the same row again: every table is a ReplacingMergeTree whose
-- sorting key ends in the record's stable id, and readers pick one row per id with LIMIT 1 BY
-- (ordered by version), so a copy never shows twice even before a merge, and across partitions.
-- A span is written pending (no end yet) and again when it ends; `version` puts a complete span
-- above any pending copy of it (2^48 + ingest milliseconds), later writes above earlier ones.
-- Timestamps keep the nanoseconds OTLP carries. Keys lead with org_id then project_id: every read is
-- tenant-scoped, and two projects of one organization sending the same ids keep their own rows.
-- No partitioning by time: the times are the client's, and an insert block spanning more than a
-- hundred months would be refused (TOO_MANY_PARTS) with every other tenant's records of its batch.
-- Every statement is re-runnable (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS trace_spans (
  org_id String,
  project_id String,
  trace_id String,
  span_id String,
  parent_span_id String,
  session_id String,
  request_id String,
  span_name String,
  span_kind LowCardinality(String),
  openinference_span_kind LowCardinality(String),
  service_name LowCardinality(String),
  source LowCardinality(String),
  started_at DateTime64(9, 'UTC'),
  ended_at DateTime64(9, 'UTC'),
  duration_ms Float64,
  status LowCardinality(String),
  status_message String,
  attributes_json String,
  payload_state LowCardinality(String),
  model_name LowCardinality(String),
  provider LowCardinality(String),
  llm_system LowCardinality(String),
  prompt_tokens Nullable(UInt64),
  completion_tokens Nullable(UInt64),
  cost_total String,
  tool_name String,
  agent_name String,
  user_id String,
  classification String,
  trace_source String,
  version UInt64,
  ingested_at DateTime64(3, 'UTC'),
  INDEX trace_spans_session_id session_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX trace_spans_request_id request_id TYPE bloom_filter(0.01) GRANULARITY 4
) ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, project_id, trace_id, span_id);

CREATE TABLE IF NOT EXISTS trace_events (
  org_id String,
  project_id String,
  trace_id String,
  span_id String,
  event_id String,
  session_id String,
  event_name LowCardinality(String),
  occurred_at DateTime64(9, 'UTC'),
  level LowCardinality(String),
  message String,
  attributes_json String,
  artifact_ref String,
  ingested_at DateTime64(3, 'UTC'),
  INDEX trace_events_session_id session_id TYPE bloom_filter(0.01) GRANULARITY 4
) ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (org_id, project_id, trace_id, event_id);

CREATE TABLE IF NOT EXISTS trace_artifacts (
  org_id String,
  project_id String,
  trace_id String,
  span_id String,
  artifact_id String,
  kind LowCardinality(String),
  object_key String,
  mime_type LowCardinality(String),
  compression LowCardinality(String),
  byte_count UInt64,
  blake3_hash String,
  payload_state LowCardinality(String),
  redaction_metadata_json String,
  ingested_at DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (org_id, project_id, trace_id, artifact_id);
