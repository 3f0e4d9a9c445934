-- Auth read models (issue 12), fed by the auth projection, plus the OIDC login states. Secrets
-- appear only as SHA-256 hashes (invites, registration codes, developer tokens, login states).

CREATE TABLE rm_auth_identities (
  identity_id        text PRIMARY KEY,
  provider           text NOT NULL,
  issuer             text NOT NULL,
  subject            text NOT NULL,
  user_id            text NOT NULL,
  linked_at          timestamptz NOT NULL,
  last_signed_in_at  timestamptz,
  UNIQUE (issuer, subject)
);
CREATE INDEX rm_auth_identities_user ON rm_auth_identities (user_id);

CREATE TABLE rm_registration_invites (
  invite_id     text PRIMARY KEY,
  token_hash    text NOT NULL UNIQUE,
  email         text NOT NULL,
  workspace_id  text,
  role          text CHECK (role IN ('manager', 'member')),
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  accepted_at   timestamptz,
  accepted_by   text
);

CREATE TABLE rm_registration_codes (
  code_id         text PRIMARY KEY,
  code_hash       text NOT NULL UNIQUE,
  uses_total      integer NOT NULL,
  uses_remaining  integer NOT NULL,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL
);

CREATE TABLE rm_developer_tokens (
  token_id      text PRIMARY KEY,
  user_id       text NOT NULL,
  org_id        text NOT NULL,
  project_id    text,
  workspace_id  text NOT NULL,
  name          text NOT NULL,
  prefix        text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL,
  revoked_at    timestamptz
);
CREATE INDEX rm_developer_tokens_owner ON rm_developer_tokens (user_id, org_id);

-- Not a read model: short-lived, single-use OIDC login states (taken with DELETE ... RETURNING).
-- They are operational data, never events, so a PKCE verifier never enters the event store.
CREATE TABLE auth_login_states (
  state_hash         text PRIMARY KEY,
  provider           text NOT NULL,
  flow               text NOT NULL CHECK (flow IN ('api', 'console')),
  nonce              text NOT NULL,
  code_verifier      text NOT NULL,
  return_to          text NOT NULL,
  invite_hash        text,
  registration_code_hash text,
  created_at         timestamptz NOT NULL,
  expires_at         timestamptz NOT NULL
);
CREATE INDEX auth_login_states_expiry ON auth_login_states (expires_at);
