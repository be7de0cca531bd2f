-- Payment webhook event ids claimed for handling, kept across restarts, so a duplicate
-- delivered after a restart is handled once (P4). A claim that never finished (the
-- process died) is taken over after a lease.
CREATE TABLE processed_webhooks (
    id          TEXT    PRIMARY KEY,
    claimed_at  INTEGER NOT NULL,
    claimed_by  TEXT    NOT NULL,                   -- the claiming process's incarnation
    handled     INTEGER NOT NULL DEFAULT 0
);
