-- Single-use console sign-in links (SPEC 4.4 console sign-in, for deployments without an identity
-- provider yet): an operator mints one with `svc console link`; opening it in a browser issues a
-- session for the named user and sets the session cookie. Like login states, operational data:
-- only the SHA-256 of the link token is kept, the row is taken with DELETE ... RETURNING.
CREATE TABLE auth_sign_in_links (
  link_hash   text PRIMARY KEY,
  email       text NOT NULL,
  return_to   text NOT NULL,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX auth_sign_in_links_expiry ON auth_sign_in_links (expires_at);
