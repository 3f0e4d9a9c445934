-- Per-API-key request and token rate limits shared by every gateway process (SPEC 7.4 Retry-After),
-- enforced by src/gateway/shared-rate-limit.ts.
--
-- One row per key and second ("slot": whole seconds since the epoch, by the gateway's clock): the
-- requests admitted (or leased) in that second and the tokens spent in it. A limit counts the
-- current slot and the 60 before it. The table is UNLOGGED: counters that live for a minute are not
-- worth WAL on every request; a server crash or a failover empties it, which forgets at most one
-- window of counts (the limiter then admits up to a fresh N), never money.
CREATE UNLOGGED TABLE rate_limit_slots (
  api_key_id text    NOT NULL,
  slot       bigint  NOT NULL,
  requests   integer NOT NULL DEFAULT 0,
  tokens     bigint  NOT NULL DEFAULT 0,
  PRIMARY KEY (api_key_id, slot)
) WITH (fillfactor = 70); -- room for HOT updates: counters change many times a second
-- The sweep deletes by age, whatever the key.
CREATE INDEX rate_limit_slots_slot ON rate_limit_slots (slot);

-- Admission for one key in one round trip: counts the window and, if the limits allow, adds up to
-- p_want admissions (a lease) to the current slot. The per-key advisory lock serialises check and
-- increment across processes (keys that collide on the hash only share a queue, never counts);
-- it is released at commit, after the increment is visible. A refusal names the limit and the
-- earliest slot whose leaving the window makes room: for one more request, or for the tokens to
-- drop below the limit (the later of the two when both are over).
--
-- p_return admissions are first taken off slot p_return_slot under the same lock: a reservation
-- answered in a later second than it was counted in moves to the new second in one step, so the
-- request is never counted twice (in the old second until a give-back lands, and in the new one),
-- which would refuse it, or another request, against a count one too high.
CREATE FUNCTION svc_rate_limit_admit(
  p_api_key_id text,
  p_slot bigint,
  p_want integer,
  p_requests_per_minute bigint,
  p_tokens_per_minute bigint,
  p_return_slot bigint,
  p_return integer
)
RETURNS TABLE (granted integer, refused_by text, free_slot bigint)
LANGUAGE plpgsql
AS $$
DECLARE
  v_requests bigint;
  v_tokens   bigint;
  v_grant    integer := p_want;
  v_req_free bigint;
  v_tok_free bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(7424017, hashtext(p_api_key_id));
  IF p_return > 0 THEN
    UPDATE rate_limit_slots s
       SET requests = greatest(s.requests - p_return, 0)
     WHERE s.api_key_id = p_api_key_id AND s.slot = p_return_slot;
  END IF;
  -- No upper bound: a slot ahead of this clock (another host's skew) counts too.
  SELECT coalesce(sum(s.requests), 0), coalesce(sum(s.tokens), 0)
    INTO v_requests, v_tokens
    FROM rate_limit_slots s
   WHERE s.api_key_id = p_api_key_id AND s.slot >= p_slot - 60;

  IF p_requests_per_minute IS NOT NULL THEN
    v_grant := least(p_want, p_requests_per_minute - v_requests);
    IF v_grant <= 0 THEN
      SELECT c.slot INTO v_req_free
        FROM (SELECT s.slot, sum(s.requests) OVER (ORDER BY s.slot) AS gone
                FROM rate_limit_slots s
               WHERE s.api_key_id = p_api_key_id AND s.slot >= p_slot - 60) c
       WHERE c.gone >= v_requests - p_requests_per_minute + 1
       ORDER BY c.slot LIMIT 1;
    END IF;
  END IF;
  IF p_tokens_per_minute IS NOT NULL AND v_tokens >= p_tokens_per_minute THEN
    SELECT c.slot INTO v_tok_free
      FROM (SELECT s.slot, sum(s.tokens) OVER (ORDER BY s.slot) AS gone
              FROM rate_limit_slots s
             WHERE s.api_key_id = p_api_key_id AND s.slot >= p_slot - 60) c
     WHERE c.gone > v_tokens - p_tokens_per_minute
     ORDER BY c.slot LIMIT 1;
    IF v_grant > 0 OR coalesce(v_tok_free, p_slot) > coalesce(v_req_free, p_slot) THEN
      RETURN QUERY SELECT 0, 'tokens_per_minute'::text, v_tok_free;
      RETURN;
    END IF;
  END IF;
  IF v_grant <= 0 THEN
    RETURN QUERY SELECT 0, 'requests_per_minute'::text, v_req_free;
    RETURN;
  END IF;

  INSERT INTO rate_limit_slots AS s (api_key_id, slot, requests)
  VALUES (p_api_key_id, p_slot, v_grant)
  ON CONFLICT (api_key_id, slot) DO UPDATE SET requests = s.requests + excluded.requests;
  RETURN QUERY SELECT v_grant, NULL::text, NULL::bigint;
END;
$$;

-- A batch of corrections from one process, off the request path: unused leases given back
-- (negative p_requests, on the slot they were counted in) and tokens spent. Rows are touched in the
-- order given, which the caller sorts by (key, slot), so two batches never deadlock; no advisory
-- lock: a give-back only frees room and a spend only adds, so neither can make an admission wrong.
CREATE FUNCTION svc_rate_limit_apply(
  p_api_key_ids text[],
  p_slots bigint[],
  p_requests integer[],
  p_tokens bigint[]
)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_api_key_ids, 1), 0) LOOP
    INSERT INTO rate_limit_slots AS s (api_key_id, slot, requests, tokens)
    VALUES (p_api_key_ids[i], p_slots[i], greatest(p_requests[i], 0), p_tokens[i])
    ON CONFLICT (api_key_id, slot) DO UPDATE
      SET requests = greatest(s.requests + p_requests[i], 0),
          tokens = s.tokens + p_tokens[i];
  END LOOP;
END;
$$;
