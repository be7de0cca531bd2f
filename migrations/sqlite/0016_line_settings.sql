-- The operator's waiting-room settings of an event (the admission override, the rules),
-- kept where the line is journaled, so a queue store that lost the line gets them back
-- with it. The last write of a name wins.
CREATE TABLE line_settings (
    event_id    INTEGER NOT NULL REFERENCES events (id),
    name        TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    PRIMARY KEY (event_id, name)
);
