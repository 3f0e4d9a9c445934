-- Credentials per lane (SPEC 4.7: a second lane has its own credentials; issue 20 finding 10).
-- A connection or platform key may name the registry lane it serves. Rows written before have no
-- lane and keep serving every lane of their provider that has no credential of its own, so the
-- existing rows need no rewrite: NULL (connections) and '' (platform keys) mean "every lane".
ALTER TABLE rm_connections ADD COLUMN lane text;
DROP INDEX rm_connections_scope;
CREATE INDEX rm_connections_scope ON rm_connections (org_id, project_id, provider, lane);

-- One platform key per provider and lane; '' is the provider-wide key (a primary key holds no NULL).
ALTER TABLE rm_platform_keys ADD COLUMN lane text NOT NULL DEFAULT '';
ALTER TABLE rm_platform_keys DROP CONSTRAINT rm_platform_keys_pkey;
ALTER TABLE rm_platform_keys ADD PRIMARY KEY (provider, lane);
