-- An event's cancellation and the job that gives every order of the event its money
-- back: a cursor over the event's orders (in id order) and the current pass's counts,
-- written together one page at a time, so the job resumes where it stopped after a
-- crash or a restart. One row per cancelled event; finished_at is set once a pass
-- found every order finished.
CREATE TABLE event_cancellations (
    event_id     BIGINT  PRIMARY KEY REFERENCES events (id),
    started_at   BIGINT  NOT NULL,
    pass         INTEGER NOT NULL,
    cursor       TEXT,                               -- last order id done in the pass
    seen         BIGINT  NOT NULL DEFAULT 0,
    returned     BIGINT  NOT NULL DEFAULT 0,
    unsold       BIGINT  NOT NULL DEFAULT 0,
    pending      BIGINT  NOT NULL DEFAULT 0,
    updated_at   BIGINT  NOT NULL,
    finished_at  BIGINT
);

-- The job reads an event's orders in id order from a cursor (byte order, whatever the
-- database's collation).
CREATE INDEX orders_by_event ON orders (event_id, id COLLATE "C");
