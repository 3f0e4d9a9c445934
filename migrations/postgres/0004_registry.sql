-- Registry read model (issue 5; src/projections/registry/projection.ts), fed by the registry-<lane>
-- streams. The gateway's in-memory snapshot loads these tables and reloads when
-- rm_registry_state.revision moves, so that one row is the only thing it polls.

CREATE TABLE rm_registry_endpoints (
  lane              text        NOT NULL,
  model             text        NOT NULL,
  adapter           text        NOT NULL,
  provider_model_id text        NOT NULL,
  base_url          text,
  display_name      text        NOT NULL,
  family            text        NOT NULL,
  release_date      text,
  description       text        NOT NULL,
  chat              boolean     NOT NULL,
  embeddings        boolean     NOT NULL,
  responses         boolean     NOT NULL,
  images            boolean     NOT NULL,
  moderations       boolean     NOT NULL,
  tools             boolean     NOT NULL,
  streaming         boolean     NOT NULL,
  reasoning         boolean     NOT NULL,
  input_modalities  text[]      NOT NULL,
  output_modalities text[]      NOT NULL,
  context_length    integer,
  max_output_tokens integer,
  enabled           boolean     NOT NULL,
  retired           boolean     NOT NULL DEFAULT false,
  -- Set by the billing-health evaluator; an upsert or retirement leaves it as it is.
  quarantined       boolean     NOT NULL DEFAULT false,
  managed_by        text        NOT NULL CHECK (managed_by IN ('import', 'operator')),
  pricing_pinned    boolean     NOT NULL,
  position          bigint      NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (lane, model)
);
CREATE INDEX rm_registry_endpoints_model ON rm_registry_endpoints (model);

-- Instants stay in the text the events carry: they are quoted back verbatim in cost-line provenance.
CREATE TABLE rm_registry_rate_cards (
  card_id        text        PRIMARY KEY,
  lane           text        NOT NULL,
  model          text        NOT NULL,
  revision       integer     NOT NULL,
  effective_from text        NOT NULL,
  effective_to   text,
  needs_approval boolean     NOT NULL,
  source         text        NOT NULL CHECK (source IN ('import', 'operator')),
  activated_at   timestamptz NOT NULL,
  approved_at    timestamptz,
  approved_by    text,
  position       bigint      NOT NULL,
  UNIQUE (lane, model, revision)
);

-- Prices are exact decimal strings per unit (per token for token meters), never numeric floats.
CREATE TABLE rm_registry_rate_rows (
  card_id     text    NOT NULL REFERENCES rm_registry_rate_cards (card_id) ON DELETE CASCADE,
  row_id      text    NOT NULL,
  tier        text    NOT NULL,
  meter       text    NOT NULL,
  modality    text    NOT NULL,
  min_context bigint  NOT NULL,
  max_context bigint,
  cache_ttl   text,
  tool_type   text,
  unit_price  text    NOT NULL,
  PRIMARY KEY (card_id, row_id)
);

CREATE TABLE rm_registry_imports (
  position            bigint      PRIMARY KEY,
  lane                text        NOT NULL,
  adapter             text        NOT NULL,
  digest              text        NOT NULL,
  catalog_file        text        NOT NULL,
  rates_file          text        NOT NULL,
  skip_unpriced       boolean     NOT NULL,
  endpoints_added     integer     NOT NULL,
  endpoints_updated   integer     NOT NULL,
  endpoints_retired   integer     NOT NULL,
  endpoints_unchanged integer     NOT NULL,
  cards_activated     integer     NOT NULL,
  cards_flagged       integer     NOT NULL,
  dropped             text[]      NOT NULL,
  skipped_operator    text[]      NOT NULL,
  actor               text,
  imported_at         timestamptz NOT NULL
);
CREATE INDEX rm_registry_imports_lane ON rm_registry_imports (lane, position);

CREATE TABLE rm_registry_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  -- Bumped in the same transaction as every change above: readers compare it, not the tables.
  revision  bigint  NOT NULL,
  position  bigint  NOT NULL
);
INSERT INTO rm_registry_state (singleton, revision, position) VALUES (true, 0, 0);
