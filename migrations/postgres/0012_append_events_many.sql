-- Appends to many streams in one statement and one transaction (ARCHITECTURE.md "The event store"):
-- ingest settles a whole flush of requests (SPEC 1.4, 8 escrow hold; SPEC 6) with one round trip,
-- one commit and one notification, where an append per request cost a commit, a WAL flush and a
-- NOTIFY each (every snapshot cache and projector in every process wakes on a NOTIFY).
--
-- The body of svc_append_events moves into svc_append_events_quiet (everything but the NOTIFY);
-- svc_append_events keeps its signature and behaviour as the one-stream case of
-- svc_append_events_many (defined last).

CREATE FUNCTION svc_append_events_quiet(p_stream text, p_category text, p_expected bigint, p_events jsonb)
RETURNS TABLE (global_position bigint, stream_version bigint, replayed boolean)
LANGUAGE plpgsql
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

  RETURN QUERY SELECT v_last + g, v_current + g, false FROM generate_series(1, v_count) AS g;
END;
$$;

-- p_streams[i], p_categories[i], p_expected[i] (NULL = any) and p_events[i] describe append i, as for
-- svc_append_events; they run in order, all or nothing. Rows come back per append (ord = i), with
-- replayed = true for an append whose message ids were all stored already. One NOTIFY, with the
-- last position written, when anything was written.
CREATE FUNCTION svc_append_events_many(p_streams text[], p_categories text[], p_expected bigint[], p_events jsonb[])
RETURNS TABLE (ord integer, global_position bigint, stream_version bigint, replayed boolean)
LANGUAGE plpgsql
AS $$
DECLARE
  v_last bigint := NULL;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
    ord := i;
    FOR global_position, stream_version, replayed IN
      SELECT a.global_position, a.stream_version, a.replayed
        FROM svc_append_events_quiet(p_streams[i], p_categories[i], p_expected[i], p_events[i]) a
    LOOP
      IF NOT replayed THEN v_last := greatest(coalesce(v_last, 0), global_position); END IF;
      RETURN NEXT;
    END LOOP;
  END LOOP;
  IF v_last IS NOT NULL THEN
    PERFORM pg_notify('svc_events', v_last::text);
  END IF;
END;
$$;

CREATE OR REPLACE FUNCTION svc_append_events(p_stream text, p_category text, p_expected bigint, p_events jsonb)
RETURNS TABLE (global_position bigint, stream_version bigint, replayed boolean)
LANGUAGE sql
AS $$
  SELECT m.global_position, m.stream_version, m.replayed
    FROM svc_append_events_many(ARRAY[p_stream], ARRAY[p_category], ARRAY[p_expected], ARRAY[p_events]) m
$$;
