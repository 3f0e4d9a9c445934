-- Wallets and pass-through billing (issue 10; SPEC 2.9, 3, 8).
--
-- The ledger is the `wallet-<workspace_id>` event stream; the tables marked "projection" are its
-- read model, rebuilt by replay. Escrow holds and webhook deliveries are operational state written
-- directly: a hold moves no money (only availability), and the hot path may spend one round trip on
-- it, never an event-store append. Money is numeric(38,18): exact decimals at the scale of
-- src/lib/money.ts, so no amount is ever rounded on its way through the database. USD only.

-- Projection (balance_usd) plus escrow (held_usd). One row per funded workspace: the row lock is
-- what serialises concurrent holds on one wallet.
CREATE TABLE workspace_wallet_balances (
  workspace_id text           PRIMARY KEY,
  currency     text           NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  balance_usd  numeric(38,18) NOT NULL DEFAULT 0,
  held_usd     numeric(38,18) NOT NULL DEFAULT 0 CHECK (held_usd >= 0),
  updated_at   timestamptz    NOT NULL DEFAULT now()
);

-- Escrow holds keyed by request id (or `refund:<workspace>:<refund_id>` for a refund in flight).
CREATE TABLE workspace_wallet_holds (
  hold_id      text           PRIMARY KEY,
  workspace_id text           NOT NULL,
  amount_usd   numeric(38,18) NOT NULL CHECK (amount_usd >= 0),
  status       text           NOT NULL DEFAULT 'active'
                              CHECK (status IN ('active', 'settled', 'expired', 'released')),
  created_at   timestamptz    NOT NULL DEFAULT now(),
  expires_at   timestamptz    NOT NULL,
  closed_at    timestamptz
);
CREATE INDEX workspace_wallet_holds_expiry ON workspace_wallet_holds (expires_at) WHERE status = 'active';
CREATE INDEX workspace_wallet_holds_active ON workspace_wallet_holds (workspace_id) WHERE status = 'active';
CREATE INDEX workspace_wallet_holds_closed ON workspace_wallet_holds (closed_at) WHERE status <> 'active';

-- Projection: one pending row per top-up, credited ("settled") by the verified webhook.
CREATE TABLE workspace_wallet_topups (
  topup_id          text           PRIMARY KEY,
  workspace_id      text           NOT NULL,
  provider          text           NOT NULL,
  payment_intent_id text           NOT NULL,
  amount_usd        numeric(38,18) NOT NULL CHECK (amount_usd > 0),
  status            text           NOT NULL CHECK (status IN ('pending', 'settled')),
  requested_by      text,
  created_at        timestamptz    NOT NULL,
  settled_at        timestamptz,
  provider_event_id text,
  UNIQUE (provider, payment_intent_id)
);
CREATE INDEX workspace_wallet_topups_workspace ON workspace_wallet_topups (workspace_id, created_at);

-- Projection: credits and refunds (SPEC 2.9 types topup, grant, refund); amounts are magnitudes.
CREATE TABLE workspace_wallet_transactions (
  transaction_id     text           PRIMARY KEY,
  workspace_id       text           NOT NULL,
  type               text           NOT NULL CHECK (type IN ('topup', 'grant', 'refund')),
  amount_usd         numeric(38,18) NOT NULL CHECK (amount_usd > 0),
  reason             text,
  idempotency_key    text,
  refund_id          text,
  provider           text,
  payment_intent_id  text,
  provider_event_id  text,
  provider_refund_id text,
  actor              text           NOT NULL,
  created_at         timestamptz    NOT NULL,
  position           bigint         NOT NULL
);
CREATE UNIQUE INDEX workspace_wallet_transactions_grant_key
  ON workspace_wallet_transactions (workspace_id, idempotency_key) WHERE type = 'grant';
CREATE UNIQUE INDEX workspace_wallet_transactions_refund_id
  ON workspace_wallet_transactions (workspace_id, refund_id) WHERE type = 'refund';
CREATE UNIQUE INDEX workspace_wallet_transactions_topup_intent
  ON workspace_wallet_transactions (provider, payment_intent_id) WHERE type = 'topup';
CREATE INDEX workspace_wallet_transactions_refunds_of
  ON workspace_wallet_transactions (payment_intent_id) WHERE type = 'refund';
CREATE INDEX workspace_wallet_transactions_ledger ON workspace_wallet_transactions (workspace_id, position);

-- Projection: request charges settled from request.completed (0 when billing failed).
CREATE TABLE workspace_wallet_charges (
  request_id     text           PRIMARY KEY,
  workspace_id   text           NOT NULL,
  charged_usd    numeric(38,18) NOT NULL CHECK (charged_usd >= 0),
  held_usd       numeric(38,18) NOT NULL CHECK (held_usd >= 0),
  billing_status text           NOT NULL,
  settled_at     timestamptz    NOT NULL,
  position       bigint         NOT NULL
);
CREATE INDEX workspace_wallet_charges_ledger ON workspace_wallet_charges (workspace_id, position);

-- Projection: the minimal provider receipt reference of each credited top-up.
CREATE TABLE workspace_billing_receipts (
  receipt_id        text           PRIMARY KEY,
  workspace_id      text           NOT NULL,
  provider          text           NOT NULL,
  payment_intent_id text           NOT NULL,
  provider_event_id text           NOT NULL,
  amount_usd        numeric(38,18) NOT NULL,
  created_at        timestamptz    NOT NULL
);
CREATE INDEX workspace_billing_receipts_workspace ON workspace_billing_receipts (workspace_id);

-- Saved payment-method references (SPEC 2.9: unused; no saved method is ever charged).
CREATE TABLE workspace_payment_methods (
  provider                   text        NOT NULL,
  provider_payment_method_id text        NOT NULL,
  workspace_id               text        NOT NULL,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, provider_payment_method_id)
);

-- Projection: auto-refill settings, stored and never acted on (SPEC 8).
CREATE TABLE workspace_wallet_auto_refill (
  workspace_id text           PRIMARY KEY,
  enabled      boolean        NOT NULL,
  trigger_usd  numeric(38,18) NOT NULL,
  amount_usd   numeric(38,18) NOT NULL,
  updated_by   text           NOT NULL,
  updated_at   timestamptz    NOT NULL
);

-- Every verified payment webhook, once per (provider, provider_event_id) (SPEC 3).
CREATE TABLE workspace_payment_webhook_events (
  provider          text           NOT NULL,
  provider_event_id text           NOT NULL,
  event_type        text           NOT NULL,
  workspace_id      text,
  payment_intent_id text,
  amount_usd        numeric(38,18),
  payload           jsonb          NOT NULL,
  received_at       timestamptz    NOT NULL DEFAULT now(),
  processed_at      timestamptz,
  outcome           text,
  PRIMARY KEY (provider, provider_event_id)
);
CREATE INDEX workspace_payment_webhook_events_succeeded
  ON workspace_payment_webhook_events (received_at) WHERE event_type = 'payment_intent.succeeded';

-- The escrow hold in one round trip: availability is checked and taken by one conditional UPDATE
-- on the wallet row, so concurrent holds queue on its row lock and each sees the others' effect
-- (READ COMMITTED re-evaluates the WHERE clause on the latest row version). A hold id seen before
-- answers ok without holding twice, so a retried hold is harmless.
CREATE FUNCTION svc_wallet_hold(p_hold_id text, p_workspace_id text, p_amount numeric, p_ttl_seconds integer)
RETURNS TABLE (ok boolean, reason text, available_usd numeric)
LANGUAGE plpgsql
AS $$
DECLARE
  v_available numeric;
BEGIN
  IF p_amount < 0 THEN
    RAISE EXCEPTION 'hold amount must not be negative: %', p_amount USING ERRCODE = '22023';
  END IF;
  INSERT INTO workspace_wallet_holds (hold_id, workspace_id, amount_usd, expires_at)
  VALUES (p_hold_id, p_workspace_id, p_amount, now() + make_interval(secs => p_ttl_seconds))
  ON CONFLICT (hold_id) DO NOTHING;
  IF NOT FOUND THEN
    RETURN QUERY SELECT true, NULL::text, NULL::numeric;
    RETURN;
  END IF;

  UPDATE workspace_wallet_balances b
     SET held_usd = b.held_usd + p_amount, updated_at = now()
   WHERE b.workspace_id = p_workspace_id AND b.balance_usd - b.held_usd >= p_amount
  RETURNING b.balance_usd - b.held_usd INTO v_available;
  IF FOUND THEN
    RETURN QUERY SELECT true, NULL::text, v_available;
    RETURN;
  END IF;

  DELETE FROM workspace_wallet_holds h WHERE h.hold_id = p_hold_id;
  SELECT b.balance_usd - b.held_usd INTO v_available
    FROM workspace_wallet_balances b WHERE b.workspace_id = p_workspace_id;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 'no_wallet'::text, NULL::numeric;
  ELSE
    RETURN QUERY SELECT false, 'insufficient_funds'::text, greatest(v_available, 0);
  END IF;
END;
$$;

-- Closes an active hold once (settled by a charge or refund, expired by the sweep, released when a
-- refund failed) and gives its amount back to availability. A hold already closed is left alone, so
-- replays and races between settlement and expiry release at most once. Returns the amount released.
CREATE FUNCTION svc_wallet_release(p_hold_id text, p_status text)
RETURNS numeric
LANGUAGE plpgsql
AS $$
DECLARE
  v_workspace text;
  v_amount    numeric;
BEGIN
  UPDATE workspace_wallet_holds h
     SET status = p_status, closed_at = now()
   WHERE h.hold_id = p_hold_id AND h.status = 'active'
  RETURNING h.workspace_id, h.amount_usd INTO v_workspace, v_amount;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  UPDATE workspace_wallet_balances b
     SET held_usd = b.held_usd - v_amount, updated_at = now()
   WHERE b.workspace_id = v_workspace;
  RETURN v_amount;
END;
$$;
