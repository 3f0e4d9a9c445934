-- Read model: one row per event stream (operators' catalogue; `svc replay streams`).
CREATE TABLE rm_streams (
  stream_id     text        PRIMARY KEY,
  category      text        NOT NULL,
  version       bigint      NOT NULL,
  event_count   bigint      NOT NULL,
  last_type     text        NOT NULL,
  last_position bigint      NOT NULL,
  updated_at    timestamptz NOT NULL
);
CREATE INDEX rm_streams_category ON rm_streams (category);
