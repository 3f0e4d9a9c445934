-- SPEC 1.8, 4.8, 6: the audit service. Per tenant (workspace), one append-only log of audit events
-- in arrival order, hashed as an RFC 9162 Merkle tree and sealed into signed batches.

-- One row per tenant: how far its log has grown and how far it is sealed. Appends lock this row, so
-- leaf indexes are gap-free per tenant; sealing moves sealed_size under an advisory lock.
CREATE TABLE IF NOT EXISTS audit_logs (
  tenant_id text PRIMARY KEY,
  size bigint NOT NULL DEFAULT 0,
  sealed_size bigint NOT NULL DEFAULT 0,
  batches bigint NOT NULL DEFAULT 0,
  -- The perfect subtree hashes that make up [0, sealed_size), 32 bytes each, largest first.
  frontier bytea NOT NULL DEFAULT ''::bytea,
  -- SHA-256 of the last manifest file (the next manifest chains to it).
  manifest_sha256 bytea,
  -- Arrival of the first event past sealed_size; null when everything is sealed.
  oldest_unsealed_at timestamptz
);

CREATE INDEX IF NOT EXISTS audit_logs_unsealed ON audit_logs (oldest_unsealed_at)
  WHERE oldest_unsealed_at IS NOT NULL;

-- The canonical bytes of every event exactly once per tenant (redelivery dedupes on event_id).
CREATE TABLE IF NOT EXISTS audit_events (
  tenant_id text NOT NULL,
  idx bigint NOT NULL,
  event_id text NOT NULL,
  bytes bytea NOT NULL,
  -- SHA-256(0x00 || bytes)
  leaf bytea NOT NULL,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idx),
  UNIQUE (tenant_id, event_id)
);

-- Hashes of the perfect subtrees of 256 leaves and more (level = log2 of the size), written when
-- the batch that completes them is sealed; proofs read these and at most two tiles of leaves.
CREATE TABLE IF NOT EXISTS audit_nodes (
  tenant_id text NOT NULL,
  level smallint NOT NULL,
  idx bigint NOT NULL,
  hash bytea NOT NULL,
  PRIMARY KEY (tenant_id, level, idx)
);

CREATE TABLE IF NOT EXISTS audit_batches (
  tenant_id text NOT NULL,
  batch_no bigint NOT NULL,
  first_index bigint NOT NULL,
  tree_size bigint NOT NULL,
  root bytea NOT NULL,
  -- canonical JSON of the signed head, its signature, and the manifest that chains it
  head text NOT NULL,
  signature text NOT NULL,
  key_id text NOT NULL,
  manifest_sha256 bytea NOT NULL,
  archive_sha256 bytea NOT NULL,
  archive_bytes bigint NOT NULL,
  sealed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, batch_no),
  UNIQUE (tenant_id, tree_size)
);

-- ed25519 signing keys; the secret half is encrypted with the master key (AES-256-GCM). One key
-- signs at a time; retired keys stay published, since the heads they signed stay valid.
CREATE TABLE IF NOT EXISTS audit_signing_keys (
  key_id text PRIMARY KEY,
  public_key bytea NOT NULL,
  secret_ciphertext text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);

CREATE UNIQUE INDEX IF NOT EXISTS audit_signing_keys_one_active ON audit_signing_keys ((true))
  WHERE retired_at IS NULL;
