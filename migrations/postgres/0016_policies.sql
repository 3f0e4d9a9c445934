-- SPEC 1.9: the policy in force on each organization, project and API key, projected from PolicySet /
-- PolicyCleared on the policy- streams. A cleared policy keeps its row (document NULL) so its
-- revision, the stream version a caller names for optimistic concurrency, is never reused.
CREATE TABLE rm_policies (
  scope        text NOT NULL CHECK (scope IN ('org', 'project', 'api_key')),
  target_id    text NOT NULL,
  org_id       text NOT NULL,
  workspace_id text NOT NULL,
  revision     integer NOT NULL,
  document     jsonb,
  updated_at   timestamptz NOT NULL,
  updated_by   text,
  PRIMARY KEY (scope, target_id)
);
CREATE INDEX rm_policies_org ON rm_policies (org_id);
CREATE INDEX rm_policies_workspace ON rm_policies (workspace_id);
