-- The after-sale (docs/ARCHITECTURE.md §8): barcode keys, the rotating-code setting,
-- tickets, gate devices and check-in. Times are Unix milliseconds.

-- Each event's Ed25519 barcode keys; the seed is the private key. The current key is
-- the highest unretired number; retired keys stay as a record but no longer verify.
CREATE TABLE ticket_keys (
    event_id    INTEGER NOT NULL REFERENCES events (id),
    kid         INTEGER NOT NULL CHECK (kid > 0),
    seed        BLOB    NOT NULL CHECK (length(seed) = 32),
    created_at  INTEGER NOT NULL,
    retired_at  INTEGER,
    PRIMARY KEY (event_id, kid)
) WITHOUT ROWID;

CREATE TABLE ticket_settings (
    event_id        INTEGER PRIMARY KEY REFERENCES events (id),
    rotating        INTEGER NOT NULL CHECK (rotating IN (0, 1)),
    rotation_secret BLOB    NOT NULL CHECK (length(rotation_secret) = 32)
);

-- One row per ticket: the current version of one seat of a paid order. The id is
-- derived from (order, seat), so a second insert of the same ticket is a no-op.
CREATE TABLE tickets (
    id          TEXT    PRIMARY KEY,
    event_id    INTEGER NOT NULL REFERENCES events (id),
    order_id    TEXT    NOT NULL REFERENCES orders (id),
    seat_id     TEXT    NOT NULL,
    holder_id   TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    attendee    TEXT,
    issued_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tickets_by_order ON tickets (order_id);
CREATE INDEX tickets_by_holder ON tickets (holder_id, event_id, seat_id);
CREATE INDEX tickets_by_event ON tickets (event_id);

-- A gate's credential is kept as its SHA-256 digest only. `creation_key` is the
-- operator's Idempotency-Key: a retried creation finds the first gate.
CREATE TABLE gates (
    id           TEXT    PRIMARY KEY,
    event_id     INTEGER NOT NULL REFERENCES events (id),
    name         TEXT    NOT NULL,
    digest       BLOB    NOT NULL UNIQUE,
    revoked      INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
    creation_key TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (event_id, creation_key)
) WITHOUT ROWID;

-- Exactly one admit per ticket: the primary key is the guard, however many gates
-- scan at once. Pinned by the tickets case
-- two_gates_racing_over_k_tickets_admit_each_exactly_once.
CREATE TABLE checkins (
    ticket_id   TEXT    PRIMARY KEY REFERENCES tickets (id),
    version     INTEGER NOT NULL,
    gate_id     TEXT    NOT NULL REFERENCES gates (id),
    at          INTEGER NOT NULL
) WITHOUT ROWID;

-- Every scan whose barcode verified, with what was decided.
CREATE TABLE scans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    ticket_id   TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    gate_id     TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    offline     INTEGER NOT NULL CHECK (offline IN (0, 1)),
    outcome     TEXT    NOT NULL
);
CREATE INDEX scans_by_ticket ON scans (ticket_id);
