-- P7 across a lost queue store after opening: every place handed out in an event's
-- line (the drawn pool's places included) and every admission batch, so a queue store
-- that lost the line is refilled with the same positions and the same admissions.
CREATE TABLE line_places (
    event_id    INTEGER NOT NULL REFERENCES events (id),
    buyer_id    TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    pool        INTEGER NOT NULL,
    joined_at   INTEGER NOT NULL,
    PRIMARY KEY (event_id, buyer_id)
);
CREATE INDEX line_places_in_order ON line_places (event_id, position);

CREATE TABLE line_admissions (
    event_id       INTEGER NOT NULL REFERENCES events (id),
    serving_up_to  INTEGER NOT NULL,
    admitted_at    INTEGER NOT NULL,
    PRIMARY KEY (event_id, serving_up_to)
);
