-- SPEC 4.2 rule 8: the alt-beta header of an alternate-dialect request is recorded with its row.
ALTER TABLE requests ADD COLUMN IF NOT EXISTS alt_beta Nullable(String) AFTER end_user_id;
