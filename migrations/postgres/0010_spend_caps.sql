-- Monthly USD spend caps per organization, project or API key (issue 13 item 5), projected from
-- SpendCapSet / SpendCapCleared on the org-, project- and apikey- streams. The gateway's spend-cap
-- cache reads this table; monthly_usd is the canonical decimal string (exact, never a float).
CREATE TABLE rm_spend_caps (
  level        text NOT NULL CHECK (level IN ('org', 'project', 'api_key')),
  target_id    text NOT NULL,
  org_id       text NOT NULL,
  workspace_id text NOT NULL,
  monthly_usd  text NOT NULL,
  updated_at   timestamptz NOT NULL,
  updated_by   text,
  PRIMARY KEY (level, target_id)
);
CREATE INDEX rm_spend_caps_org ON rm_spend_caps (org_id);
CREATE INDEX rm_spend_caps_workspace ON rm_spend_caps (workspace_id);
