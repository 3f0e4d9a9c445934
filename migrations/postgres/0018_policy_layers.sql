-- SPEC 1.9: a scope holds two policies, the operator's (set by the platform administrator; a
-- workspace can neither change nor lift it) and the workspace's (set by its managers). The policy
-- projection's version 2 rebuilds the table from the policy- streams.
ALTER TABLE rm_policies
  ADD COLUMN layer text NOT NULL DEFAULT 'workspace' CHECK (layer IN ('operator', 'workspace'));
ALTER TABLE rm_policies DROP CONSTRAINT rm_policies_pkey;
ALTER TABLE rm_policies ADD PRIMARY KEY (scope, target_id, layer);
