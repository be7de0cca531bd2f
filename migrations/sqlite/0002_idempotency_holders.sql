-- Idempotency claims remember the process incarnation that took them: after a restart
-- every claim of an earlier incarnation is dead, and a retry takes it over at once
-- instead of waiting out its lease. Claims made before this column existed have no
-- holder and are treated the same way. Records are pruned by age, oldest first.
ALTER TABLE idempotency_keys ADD COLUMN holder BLOB;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
