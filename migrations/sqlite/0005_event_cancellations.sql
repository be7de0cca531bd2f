-- An event's cancellation and the job that gives every order of the event its money
-- back: a cursor over the event's orders (in id order) and the current pass's counts,
-- written together one page at a time, so the job resumes where it stopped after a
-- crash or a restart. One row per cancelled event; finished_at is set once a pass
-- found every order finished.
CREATE TABLE event_cancellations (
    event_id     INTEGER PRIMARY KEY REFERENCES events (id),
    started_at   INTEGER NOT NULL,
    pass         INTEGER NOT NULL,
    cursor       TEXT,                               -- last order id done in the pass
    seen         INTEGER NOT NULL DEFAULT 0,
    returned     INTEGER NOT NULL DEFAULT 0,
    unsold       INTEGER NOT NULL DEFAULT 0,
    pending      INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL,
    finished_at  INTEGER
);

-- The job reads an event's orders in id order from a cursor.
CREATE INDEX orders_by_event ON orders (event_id, id);
