-- Payment webhook event ids claimed for handling, shared by every node and kept across
-- restarts, so a duplicate delivered to another node or after a restart is handled once
-- (P4). A claim that never finished (its node died) is taken over after a lease.
CREATE TABLE processed_webhooks (
    id          TEXT    PRIMARY KEY,
    claimed_at  BIGINT  NOT NULL,
    claimed_by  TEXT    NOT NULL,                   -- the claiming process's incarnation
    handled     BOOLEAN NOT NULL DEFAULT FALSE
);
