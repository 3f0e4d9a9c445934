-- SPEC 5, audit read facade: bearer tokens with scope audit:read, each bound to one workspace (the
-- audit tenant), projected from AuditTokenCreated / AuditTokenRevoked on the audittoken- streams.
-- Only the SHA-256 hash of a secret is stored; verification looks the hash up.
CREATE TABLE rm_audit_tokens (
  audit_token_id text PRIMARY KEY,
  workspace_id   text NOT NULL,
  name           text NOT NULL,
  prefix         text NOT NULL,
  secret_hash    text NOT NULL UNIQUE,
  scopes         text[] NOT NULL,
  created_at     timestamptz NOT NULL,
  created_by     text,
  revoked_at     timestamptz
);
CREATE INDEX rm_audit_tokens_workspace ON rm_audit_tokens (workspace_id);
