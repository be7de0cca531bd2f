-- Names on tickets (docs/ARCHITECTURE.md §9, "Names on tickets"): how many times the
-- holder changed the attendee's name on a ticket. Setting the first name (or the name
-- after a transfer) is not a change; the event's transfer policy caps the changes, and
-- every rename is conditional on the count, so racing renames cannot pass the cap.
ALTER TABLE tickets ADD COLUMN name_changes INTEGER NOT NULL DEFAULT 0
    CHECK (name_changes >= 0);
