-- Postgres-table bus, the embedded default of the bus port (issue 3; src/events/postgres/bus.ts).
-- Published messages are kept per stream like JetStream's limits retention. Each durable consumer
-- owns one delivery row per message it has still to settle: publishing fans a message out to every
-- consumer whose filter matches, acking deletes the row, and a row's visible_at is both the lease
-- (ack_wait) and a nak delay. delivery_count doubles as the lease token.

CREATE SEQUENCE svc_bus_seq;

CREATE TABLE svc_bus_messages (
  seq          bigint      PRIMARY KEY,
  stream       text        NOT NULL,
  subject      text        NOT NULL,
  message_id   text        NOT NULL,
  data         bytea       NOT NULL,
  headers      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  published_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX svc_bus_messages_age ON svc_bus_messages (stream, published_at);

-- One row per (stream, message id) seen within the duplicate window; expired rows are reused in
-- place and pruned by the adapter's housekeeping.
CREATE TABLE svc_bus_dedupe (
  stream     text        NOT NULL,
  message_id text        NOT NULL,
  seq        bigint      NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (stream, message_id)
);
CREATE INDEX svc_bus_dedupe_expiry ON svc_bus_dedupe (expires_at);

CREATE TABLE svc_bus_consumers (
  name           text        PRIMARY KEY,
  filter_subject text        NOT NULL,
  filter_regex   text        NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE svc_bus_deliveries (
  consumer       text        NOT NULL REFERENCES svc_bus_consumers (name) ON DELETE CASCADE,
  seq            bigint      NOT NULL,
  subject        text        NOT NULL,
  delivery_count integer     NOT NULL DEFAULT 0,
  visible_at     timestamptz NOT NULL DEFAULT '-infinity',
  PRIMARY KEY (consumer, seq)
);
-- Serves the per-subject ordering check: is an earlier message of this subject still unsettled?
CREATE INDEX svc_bus_deliveries_subject ON svc_bus_deliveries (consumer, subject, seq);

-- Every publisher holds this key shared; creating a consumer holds it exclusively while it copies
-- the existing messages, so no message is both too late for the copy and too early for fan-out.
-- Returns the stored seq, or the original's seq with duplicate = true inside the window.
CREATE FUNCTION svc_bus_publish(p_stream text, p_subject text, p_message_id text, p_data bytea,
                                p_headers jsonb, p_window_ms integer)
RETURNS TABLE (published_seq bigint, duplicate boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_seq bigint := nextval('svc_bus_seq');
  v_now timestamptz := clock_timestamp();
BEGIN
  PERFORM pg_advisory_xact_lock_shared(7424002);

  INSERT INTO svc_bus_dedupe AS d (stream, message_id, seq, expires_at)
  VALUES (p_stream, p_message_id, v_seq, v_now + p_window_ms * interval '1 millisecond')
  ON CONFLICT (stream, message_id) DO UPDATE SET seq = excluded.seq, expires_at = excluded.expires_at
    WHERE d.expires_at <= v_now;
  IF NOT FOUND THEN
    RETURN QUERY SELECT d.seq, true FROM svc_bus_dedupe d
      WHERE d.stream = p_stream AND d.message_id = p_message_id;
    RETURN;
  END IF;

  INSERT INTO svc_bus_messages (seq, stream, subject, message_id, data, headers, published_at)
  VALUES (v_seq, p_stream, p_subject, p_message_id, p_data, p_headers, v_now);

  INSERT INTO svc_bus_deliveries (consumer, seq, subject)
  SELECT c.name, v_seq, p_subject FROM svc_bus_consumers c WHERE p_subject ~ c.filter_regex;

  RETURN QUERY SELECT v_seq, false;
END;
$$;

-- Creates the durable consumer once, with a delivery row for every retained message it matches
-- (JetStream's deliver-all). Returns the filter the consumer was created with, which differs from
-- p_filter when the name is already taken by another filter.
CREATE FUNCTION svc_bus_create_consumer(p_name text, p_filter text, p_regex text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_filter text;
BEGIN
  SELECT c.filter_subject INTO v_filter FROM svc_bus_consumers c WHERE c.name = p_name;
  IF FOUND THEN
    RETURN v_filter;
  END IF;
  PERFORM pg_advisory_xact_lock(7424002);
  INSERT INTO svc_bus_consumers (name, filter_subject, filter_regex) VALUES (p_name, p_filter, p_regex)
  ON CONFLICT (name) DO NOTHING;
  IF NOT FOUND THEN
    SELECT c.filter_subject INTO v_filter FROM svc_bus_consumers c WHERE c.name = p_name;
    RETURN v_filter;
  END IF;
  INSERT INTO svc_bus_deliveries (consumer, seq, subject)
  SELECT p_name, m.seq, m.subject FROM svc_bus_messages m WHERE m.subject ~ p_regex;
  RETURN p_filter;
END;
$$;

-- Moves one unsettled message of a consumer to the dead-letter stream and drops its delivery row,
-- in one transaction. False when the row is already gone (acked or dead-lettered elsewhere).
CREATE FUNCTION svc_bus_dead_letter(p_consumer text, p_seq bigint, p_dlq_stream text, p_dlq_subject text,
                                    p_dlq_message_id text, p_dlq_headers jsonb, p_window_ms integer)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_data    bytea;
  v_headers jsonb;
BEGIN
  SELECT m.data, m.headers INTO v_data, v_headers
    FROM svc_bus_deliveries d JOIN svc_bus_messages m ON m.seq = d.seq
   WHERE d.consumer = p_consumer AND d.seq = p_seq
     FOR UPDATE OF d;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM svc_bus_publish(p_dlq_stream, p_dlq_subject, p_dlq_message_id, v_data, v_headers || p_dlq_headers,
                          p_window_ms);
  DELETE FROM svc_bus_deliveries d WHERE d.consumer = p_consumer AND d.seq = p_seq;
  RETURN true;
END;
$$;
