-- The durable ledger (docs/ARCHITECTURE.md §2) in PostgreSQL: the same tables, keys and guards as
-- migrations/sqlite, so both adapters pass one conformance suite. Times are Unix
-- milliseconds (BIGINT) because the domain passes `now` in; the database clock is not
-- the engine's clock.

CREATE TABLE events (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        TEXT    NOT NULL,
    currency    TEXT    NOT NULL,
    -- SaleStatus::as_str's names; crates/domain/tests/stored_names.rs keeps them equal.
    status      TEXT    NOT NULL CHECK (status IN ('scheduled', 'open', 'closed')),
    body        JSONB   NOT NULL,                   -- the built domain `Event`
    created_at  BIGINT  NOT NULL
);
CREATE INDEX events_by_status ON events (status);

-- One row per sellable unit: what sold_seats may reference (P1: no unknown seat sold).
CREATE TABLE event_seats (
    event_id    BIGINT  NOT NULL REFERENCES events (id),
    seat_id     TEXT    NOT NULL,                   -- the public label, e.g. S1-4-12
    seat_index  INTEGER NOT NULL,
    PRIMARY KEY (event_id, seat_id),
    UNIQUE (event_id, seat_index)
);

CREATE TABLE buyers (
    id          TEXT    PRIMARY KEY,
    created_at  BIGINT  NOT NULL
);

-- buyer_id is not a foreign key: in cluster mode buyers may live in an identity
-- service, and an order must still be recordable.
CREATE TABLE orders (
    id          TEXT    PRIMARY KEY,
    hold_id     TEXT    NOT NULL CONSTRAINT one_order_per_hold UNIQUE,
    event_id    BIGINT  NOT NULL REFERENCES events (id),
    buyer_id    TEXT    NOT NULL,
    seats       JSONB   NOT NULL,                   -- [{seat_id, price}]
    total       BIGINT  NOT NULL,
    currency    TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    payment_ref TEXT,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL
);
CREATE INDEX orders_by_state ON orders (state, updated_at);
CREATE INDEX orders_by_buyer ON orders (buyer_id, created_at);

-- P1: the primary key is the structural guarantee that a seat is sold once.
-- Pinned by the ledger case k_seats_and_many_more_orders_sell_exactly_k_seats. The
-- adapter recognises a clash by this constraint's name.
CREATE TABLE sold_seats (
    event_id    BIGINT  NOT NULL,
    seat_id     TEXT    NOT NULL,
    order_id    TEXT    NOT NULL REFERENCES orders (id),
    buyer_id    TEXT    NOT NULL,
    price       BIGINT  NOT NULL,                   -- the hold's quote, not today's price
    sold_at     BIGINT  NOT NULL,
    CONSTRAINT sold_seats_pkey PRIMARY KEY (event_id, seat_id),
    FOREIGN KEY (event_id, seat_id) REFERENCES event_seats (event_id, seat_id)
);
CREATE INDEX sold_seats_by_order ON sold_seats (order_id);

-- P6: the ledger's half of the per-buyer limit; the CHECK refuses a commit that would
-- take a buyer over the limit, however many commits (and nodes) race.
-- The guarantee; the hot store's count (store-memory event.rs, store-redis common.lua)
-- only spares buyers a payment for seats they cannot have. Pinned by the ledger case
-- a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats and the arbiter case
-- a_buyer_cannot_hold_more_than_the_limit_across_holds.
CREATE TABLE buyer_tickets (
    event_id    BIGINT  NOT NULL REFERENCES events (id),
    buyer_id    TEXT    NOT NULL,
    tickets     INTEGER NOT NULL,
    max_tickets INTEGER NOT NULL,
    CONSTRAINT buyer_within_limit CHECK (tickets <= max_tickets),
    PRIMARY KEY (event_id, buyer_id)
);

-- One row per provider interaction the engine reports (for reconciliation).
CREATE TABLE payments (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id    TEXT    NOT NULL REFERENCES orders (id),
    kind        TEXT    NOT NULL,
    reference   TEXT    NOT NULL,
    amount      BIGINT  NOT NULL,
    at          BIGINT  NOT NULL
);
CREATE INDEX payments_by_order ON payments (order_id);

-- Written in the commit's transaction; a relay publishes and stamps published_at.
CREATE TABLE outbox (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id     TEXT   NOT NULL REFERENCES orders (id),
    kind         TEXT   NOT NULL,
    payload      JSONB  NOT NULL,
    created_at   BIGINT NOT NULL,
    published_at BIGINT
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

CREATE TABLE idempotency_keys (
    scope       TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint BYTEA   NOT NULL,
    status      INTEGER,                            -- set by finish
    body        BYTEA,                              -- set by finish
    state       TEXT    NOT NULL CHECK (state IN ('in_flight', 'done')),
    lease_until BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (scope, key)
);

-- The order history is evidence: it can only grow.
CREATE TABLE order_events (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id    TEXT    NOT NULL REFERENCES orders (id),
    from_state  TEXT,                               -- NULL for the creation
    to_state    TEXT    NOT NULL,
    event       TEXT    NOT NULL,
    at          BIGINT  NOT NULL
);
CREATE INDEX order_events_by_order ON order_events (order_id);

CREATE FUNCTION order_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'order_events is append-only' USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER order_events_no_change BEFORE UPDATE OR DELETE ON order_events
    FOR EACH ROW EXECUTE FUNCTION order_events_append_only();

-- TRUNCATE skips row triggers, so it gets its own.
CREATE TRIGGER order_events_no_truncate BEFORE TRUNCATE ON order_events
    FOR EACH STATEMENT EXECUTE FUNCTION order_events_append_only();
