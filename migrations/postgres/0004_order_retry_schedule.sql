-- The recovery sweep's schedule per order: how many attempts it made at the order in its
-- current state, and when it may try again. Kept in the ledger so that a backoff
-- survives a restart and nodes sweeping one ledger do not attempt one order at once.
-- Existing orders are due at once (0).
ALTER TABLE orders ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0;

-- The sweep's work list is read in (next_attempt_at, id) order from a cursor.
CREATE INDEX orders_due ON orders (state, next_attempt_at, id);
