-- P7 across restarts: the fairness seed of an event, drawn once (first writer wins),
-- and the buyers of its pre-opening pool in arrival order, so a queue store that is
-- lost before opening (an embedded restart, a Redis restart) is refilled with the same
-- pool and draws the order the published commitment promised.
CREATE TABLE fairness_seeds (
    event_id    BIGINT  PRIMARY KEY REFERENCES events (id),
    seed        TEXT    NOT NULL
);

CREATE TABLE pool_joins (
    event_id    BIGINT    NOT NULL REFERENCES events (id),
    seq         BIGSERIAL NOT NULL,
    buyer_id    TEXT      NOT NULL,
    joined_at   BIGINT    NOT NULL,
    PRIMARY KEY (event_id, buyer_id)
);
CREATE INDEX pool_joins_in_order ON pool_joins (event_id, seq);
