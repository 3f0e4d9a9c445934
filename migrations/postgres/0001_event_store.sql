-- Event store (ARCHITECTURE.md "The event store"; issue 2).
-- Appends serialise on one counter row, so global positions are gap-free and commit in order:
-- a reader that sees position p has already been able to see every position below p.

CREATE TABLE svc_events (
  global_position bigint PRIMARY KEY,
  stream_id       text        NOT NULL,
  stream_version  bigint      NOT NULL CHECK (stream_version >= 1),
  category        text        NOT NULL,
  message_id      text        NOT NULL UNIQUE,
  type            text        NOT NULL,
  schema_version  integer     NOT NULL DEFAULT 1,
  data            jsonb       NOT NULL,
  metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  recorded_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (stream_id, stream_version)
);
CREATE INDEX svc_events_category_position ON svc_events (category, global_position);

CREATE TABLE svc_event_position (
  singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  last_position bigint  NOT NULL
);
INSERT INTO svc_event_position (singleton, last_position) VALUES (true, 0);

-- p_expected: NULL = any, 0 = no stream yet, n = the stream's current version must be n.
-- p_events: [{message_id, type, schema_version, data, metadata}, ...]
-- Returns one row per event; replayed = true when every message id was already stored (an
-- idempotent retry), in which case nothing is written and the original positions come back.
CREATE FUNCTION svc_append_events(p_stream text, p_category text, p_expected bigint, p_events jsonb)
RETURNS TABLE (global_position bigint, stream_version bigint, replayed boolean)
LANGUAGE plpgsql
-- A plan cached while the table was small keeps seq-scanning it once it is large: plan each call.
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  v_count    integer := jsonb_array_length(p_events);
  v_ids      text[];
  v_existing integer;
  v_last     bigint;
  v_current  bigint;
BEGIN
  IF v_count = 0 THEN
    RETURN;
  END IF;
  SELECT array_agg(e->>'message_id') INTO v_ids FROM jsonb_array_elements(p_events) e;

  -- Serialise every append: the row lock is held until commit.
  SELECT p.last_position INTO v_last FROM svc_event_position p WHERE p.singleton FOR UPDATE;

  SELECT count(*) INTO v_existing FROM svc_events ev WHERE ev.message_id = ANY (v_ids);
  IF v_existing > 0 THEN
    IF v_existing = v_count AND NOT EXISTS (
      SELECT 1 FROM svc_events ev WHERE ev.message_id = ANY (v_ids) AND ev.stream_id <> p_stream
    ) THEN
      RETURN QUERY SELECT ev.global_position, ev.stream_version, true
        FROM svc_events ev WHERE ev.message_id = ANY (v_ids) ORDER BY ev.global_position;
      RETURN;
    END IF;
    RAISE EXCEPTION 'message ids partly stored already (% of %) in stream %', v_existing, v_count, p_stream
      USING ERRCODE = 'SVC02';
  END IF;

  SELECT coalesce(max(ev.stream_version), 0) INTO v_current FROM svc_events ev WHERE ev.stream_id = p_stream;
  IF p_expected IS NOT NULL AND p_expected <> v_current THEN
    RAISE EXCEPTION 'wrong expected version for stream %: expected %, actual %', p_stream, p_expected, v_current
      USING ERRCODE = 'SVC01', DETAIL = v_current::text;
  END IF;

  INSERT INTO svc_events (global_position, stream_id, stream_version, category, message_id, type,
                          schema_version, data, metadata)
  SELECT v_last + e.ord, p_stream, v_current + e.ord, p_category, e.value->>'message_id', e.value->>'type',
         coalesce((e.value->>'schema_version')::integer, 1), e.value->'data',
         coalesce(e.value->'metadata', '{}'::jsonb)
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(value, ord);

  UPDATE svc_event_position SET last_position = v_last + v_count WHERE singleton;
  PERFORM pg_notify('svc_events', (v_last + v_count)::text);

  RETURN QUERY SELECT v_last + g, v_current + g, false FROM generate_series(1, v_count) AS g;
END;
$$;

-- Projection checkpoints (issue 2): a projection's read model and its row here change in one
-- transaction; the row lock taken per batch keeps two runners from applying one event twice.
CREATE TABLE svc_projection_checkpoints (
  name       text        PRIMARY KEY,
  version    integer     NOT NULL,
  position   bigint      NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
