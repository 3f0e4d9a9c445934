-- Issue 22 (an inclusion proof under 5 ms): sealers now also store the perfect subtrees of 16 to
-- 128 leaves (audit_nodes levels 4 to 7), so that a proof reads 16 leaves instead of a tile of 256
-- and hashes 15 nodes instead of 255. A log sealed before this holds them only from
-- small_nodes_from on: the sealed size at which a sealer that stores them first sealed it (NULL
-- until then). A proof reads the whole tile when the tile starts before small_nodes_from.
ALTER TABLE audit_logs ADD COLUMN IF NOT EXISTS small_nodes_from bigint;
