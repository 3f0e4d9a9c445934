-- Control-plane read models (issue 4), fed by the control_plane projection. Secrets appear only
-- as SHA-256 hashes (keys, sessions) or AES-256-GCM ciphertext (provider credentials).

CREATE TABLE rm_workspaces (
  workspace_id text PRIMARY KEY,
  name         text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL
);

CREATE TABLE rm_users (
  user_id    text PRIMARY KEY,
  email      text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL
);

CREATE TABLE rm_workspace_members (
  workspace_id text NOT NULL,
  user_id      text NOT NULL,
  role         text NOT NULL CHECK (role IN ('manager', 'member')),
  PRIMARY KEY (workspace_id, user_id)
);

CREATE TABLE rm_sessions (
  session_id  text PRIMARY KEY,
  user_id     text NOT NULL,
  token_hash  text NOT NULL UNIQUE,
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);

CREATE TABLE rm_orgs (
  org_id           text PRIMARY KEY,
  workspace_id     text NOT NULL,
  name             text NOT NULL,
  provider_disallow text[] NOT NULL DEFAULT '{}',
  tracing          boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL,
  UNIQUE (workspace_id, name)
);

CREATE TABLE rm_projects (
  project_id   text PRIMARY KEY,
  org_id       text NOT NULL,
  workspace_id text NOT NULL,
  name         text NOT NULL,
  tracing      boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL,
  UNIQUE (org_id, name)
);

CREATE TABLE rm_api_keys (
  api_key_id   text PRIMARY KEY,
  project_id   text NOT NULL,
  org_id       text NOT NULL,
  workspace_id text NOT NULL,
  name         text NOT NULL,
  prefix       text NOT NULL,
  secret_hash  text NOT NULL UNIQUE,
  tracing      boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);
CREATE INDEX rm_api_keys_project ON rm_api_keys (project_id);

CREATE TABLE rm_dimension_definitions (
  definition_id text PRIMARY KEY,
  workspace_id  text NOT NULL,
  key           text NOT NULL,
  description   text NOT NULL,
  created_at    timestamptz NOT NULL,
  archived_at   timestamptz
);

CREATE TABLE rm_dimension_assignments (
  api_key_id     text NOT NULL,
  definition_id  text NOT NULL,
  value          text NOT NULL,
  effective_from timestamptz NOT NULL,
  effective_to   timestamptz,
  PRIMARY KEY (api_key_id, definition_id, effective_from)
);

CREATE TABLE rm_connections (
  connection_id     text PRIMARY KEY,
  workspace_id      text NOT NULL,
  org_id            text NOT NULL,
  project_id        text,
  provider          text NOT NULL,
  name              text NOT NULL,
  base_url          text,
  metadata          jsonb NOT NULL,
  secret_ciphertext text NOT NULL,
  created_at        timestamptz NOT NULL,
  deleted_at        timestamptz
);
CREATE INDEX rm_connections_scope ON rm_connections (org_id, project_id, provider);

CREATE TABLE rm_platform_keys (
  provider          text PRIMARY KEY,
  name              text NOT NULL,
  base_url          text,
  metadata          jsonb NOT NULL,
  secret_ciphertext text NOT NULL,
  updated_at        timestamptz NOT NULL
);

CREATE TABLE rm_trace_ingest_keys (
  trace_ingest_key_id text PRIMARY KEY,
  project_id          text NOT NULL,
  org_id              text NOT NULL,
  workspace_id        text NOT NULL,
  name                text NOT NULL,
  prefix              text NOT NULL,
  secret_hash         text NOT NULL UNIQUE,
  created_at          timestamptz NOT NULL,
  rotated_at          timestamptz,
  revoked_at          timestamptz
);
