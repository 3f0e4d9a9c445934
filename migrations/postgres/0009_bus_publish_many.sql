-- Batch publish for the Postgres-table bus (issue 11; src/events/postgres/bus.ts publishMany).
-- Same rules as svc_bus_publish, set-based: one statement stores every new message of the batch,
-- its dedupe entry and its delivery rows. Sequence numbers follow the batch order, so per-subject
-- order holds within a batch. Within the duplicate window an id seen before, or earlier in the
-- same batch, is a duplicate and reports the stored message's seq. Returns one row per input
-- message, by its 1-based position.
CREATE FUNCTION svc_bus_publish_many(p_streams text[], p_subjects text[], p_message_ids text[],
                                     p_data bytea[], p_headers jsonb[], p_window_ms integer)
RETURNS TABLE (ord integer, published_seq bigint, duplicate boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now    timestamptz := clock_timestamp();
  v_stored integer[];
BEGIN
  PERFORM pg_advisory_xact_lock_shared(7424002);

  WITH input AS (
    SELECT i.ord::integer AS ord, i.stream, p_subjects[i.ord] AS subject, p_message_ids[i.ord] AS message_id
      FROM unnest(p_streams) WITH ORDINALITY AS i (stream, ord)
  ), firsts AS (
    SELECT DISTINCT ON (stream, message_id) ord, stream, subject, message_id
      FROM input ORDER BY stream, message_id, ord
  ), numbered AS (
    SELECT f.*, nextval('svc_bus_seq') AS seq FROM (SELECT * FROM firsts ORDER BY ord) f
  ), stored AS (
    INSERT INTO svc_bus_dedupe AS d (stream, message_id, seq, expires_at)
    SELECT n.stream, n.message_id, n.seq, v_now + p_window_ms * interval '1 millisecond' FROM numbered n
    ON CONFLICT (stream, message_id) DO UPDATE SET seq = excluded.seq, expires_at = excluded.expires_at
      WHERE d.expires_at <= v_now
    RETURNING d.seq
  ), messages AS (
    INSERT INTO svc_bus_messages (seq, stream, subject, message_id, data, headers, published_at)
    SELECT n.seq, n.stream, n.subject, n.message_id, p_data[n.ord], p_headers[n.ord], v_now
      FROM numbered n JOIN stored s ON s.seq = n.seq
    RETURNING seq, subject
  ), deliveries AS (
    INSERT INTO svc_bus_deliveries (consumer, seq, subject)
    SELECT c.name, m.seq, m.subject FROM messages m JOIN svc_bus_consumers c ON m.subject ~ c.filter_regex
  )
  SELECT coalesce(array_agg(n.ord), '{}') INTO v_stored FROM numbered n JOIN stored s ON s.seq = n.seq;

  -- A later statement sees the dedupe rows of this batch and of publishers that committed meanwhile.
  RETURN QUERY
  SELECT i.ord::integer, d.seq, NOT (i.ord::integer = ANY (v_stored))
    FROM unnest(p_streams, p_message_ids) WITH ORDINALITY AS i (stream, message_id, ord)
    JOIN svc_bus_dedupe d ON d.stream = i.stream AND d.message_id = i.message_id
   ORDER BY i.ord;
END;
$$;
