-- Idempotency claims remember the node incarnation that took them, and every node
-- records a heartbeat. A claim whose holder's heartbeat went stale (the node died) is
-- taken over by a retry at once instead of waiting out its lease. Claims made before
-- this column existed have no holder and count as dead. Records are pruned by age,
-- oldest first, in small batches.
ALTER TABLE idempotency_keys ADD COLUMN holder BYTEA;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

CREATE TABLE node_heartbeats (
    node        BYTEA   PRIMARY KEY,                -- a process incarnation (16 random bytes)
    beat_at     BIGINT  NOT NULL                    -- its last heartbeat, Unix ms
);
