-- P7 across restarts: the fairness seed of an event, drawn once (first writer wins),
-- and the buyers of its pre-opening pool in arrival order (rowid order), so the
-- in-process queue, lost at every restart, is refilled before opening with the same
-- pool and draws the order the published commitment promised.
CREATE TABLE fairness_seeds (
    event_id    INTEGER PRIMARY KEY REFERENCES events (id),
    seed        TEXT    NOT NULL
);

CREATE TABLE pool_joins (
    event_id    INTEGER NOT NULL REFERENCES events (id),
    buyer_id    TEXT    NOT NULL,
    joined_at   INTEGER NOT NULL,
    PRIMARY KEY (event_id, buyer_id)
);
