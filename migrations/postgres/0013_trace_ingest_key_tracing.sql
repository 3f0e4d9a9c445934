-- SPEC 1.10, 2.3: full payload capture can be turned on for one trace ingest key, as for an org,
-- a project or an API key. Existing keys keep capture off.
ALTER TABLE rm_trace_ingest_keys ADD COLUMN IF NOT EXISTS tracing boolean NOT NULL DEFAULT false;
