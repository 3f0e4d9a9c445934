-- The append notification names the categories it wrote: `<last position> <category>,<category>...`
-- (it said only the position). A listener that follows some categories (the gateway's snapshot
-- caches follow the control plane, the registry and policies) ignores the rest: every request's
-- wallet settlement no longer wakes every cache in every process (SPEC 6; issue: performance).
-- A payload without categories (a notification of an older server) is relevant to every listener.

CREATE OR REPLACE FUNCTION svc_append_events_many(p_streams text[], p_categories text[], p_expected bigint[], p_events jsonb[])
RETURNS TABLE (ord integer, global_position bigint, stream_version bigint, replayed boolean)
LANGUAGE plpgsql
AS $$
DECLARE
  v_last bigint := NULL;
  v_written text[] := ARRAY[]::text[];
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
    ord := i;
    FOR global_position, stream_version, replayed IN
      SELECT a.global_position, a.stream_version, a.replayed
        FROM svc_append_events_quiet(p_streams[i], p_categories[i], p_expected[i], p_events[i]) a
    LOOP
      IF NOT replayed THEN
        v_last := greatest(coalesce(v_last, 0), global_position);
        IF NOT p_categories[i] = ANY (v_written) THEN v_written := v_written || p_categories[i]; END IF;
      END IF;
      RETURN NEXT;
    END LOOP;
  END LOOP;
  IF v_last IS NOT NULL THEN
    PERFORM pg_notify('svc_events', v_last::text || ' ' || array_to_string(v_written, ','));
  END IF;
END;
$$;
