-- A projection's revision: a counter that moves only when its read model changed (a batch applied
-- events, or a rebuild). The checkpoint's position also moves past other categories' events, so a
-- snapshot cache keyed on the position (the gateway's tenancy snapshot on control_plane) reloaded
-- its whole read model about once a second under load, when only wallets had moved (SPEC 6; issue:
-- performance).
ALTER TABLE svc_projection_checkpoints ADD COLUMN revision bigint NOT NULL DEFAULT 0;
