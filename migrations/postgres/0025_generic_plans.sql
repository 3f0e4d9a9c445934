-- The statements inside the functions every request calls take array parameters; PostgreSQL planned
-- them anew on each call (a custom plan: with the arrays' sizes known, each looks cheaper than the
-- generic one), a fifth of the database's time per request at one request at a time. Their plans do
-- not depend on the values (index lookups by key, inserts), so each is planned once per session
-- (SPEC 6; issue: performance).
ALTER FUNCTION svc_bus_publish_many(text[], text[], text[], bytea[], jsonb[], integer)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION svc_bus_publish(text, text, text, bytea, jsonb, integer)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION svc_append_events_many(text[], text[], bigint[], jsonb[])
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION svc_append_events_quiet(text, text, bigint, jsonb)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION svc_wallet_hold(text, text, numeric, integer)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION svc_wallet_release(text, text)
  SET plan_cache_mode = force_generic_plan;
