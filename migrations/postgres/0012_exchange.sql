-- The face-value exchange (docs/ARCHITECTURE.md §9, "The exchange"): listings of
-- tickets at no more than face value, and the swaps that take them. Times are Unix
-- milliseconds, amounts minor units.

-- `version` is the ticket's version when listed: the listing is good for it only.
CREATE TABLE exchange_listings (
    id          TEXT    PRIMARY KEY,
    ticket_id   TEXT    NOT NULL REFERENCES tickets (id),
    event_id    BIGINT  NOT NULL REFERENCES events (id),
    seat_id     TEXT    NOT NULL,
    seller      TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    price       BIGINT  NOT NULL CHECK (price >= 0),
    state       TEXT    NOT NULL CHECK (state IN ('open', 'reserved', 'sold', 'withdrawn')),
    created_at  BIGINT  NOT NULL,
    ended_at    BIGINT
);
-- At most one live listing per ticket: of two listings racing, the second meets this.
CREATE UNIQUE INDEX exchange_listings_one_live ON exchange_listings (ticket_id)
    WHERE state IN ('open', 'reserved');
CREATE INDEX exchange_listings_open ON exchange_listings (event_id, id) WHERE state = 'open';

-- One buyer taking one listing. Written `reserved` in the transaction that reserves
-- the listing, before any money moves; every later move is conditional on the state
-- it leaves. `charge` is the buyer's payment's key at the provider.
CREATE TABLE exchange_swaps (
    id             TEXT    PRIMARY KEY,
    listing_id     TEXT    NOT NULL REFERENCES exchange_listings (id),
    ticket_id      TEXT    NOT NULL,
    event_id       BIGINT  NOT NULL,
    seller         TEXT    NOT NULL,
    buyer          TEXT    NOT NULL CHECK (buyer != seller),
    seller_order   TEXT    NOT NULL REFERENCES orders (id),
    charge         TEXT    NOT NULL UNIQUE,
    charge_ref     TEXT,
    price          BIGINT  NOT NULL CHECK (price >= 0),
    currency       TEXT    NOT NULL,
    payout         BIGINT  NOT NULL CHECK (payout >= 0 AND payout <= price),
    payment_method TEXT    NOT NULL,
    state          TEXT    NOT NULL CHECK (state IN ('reserved', 'charged', 'moved', 'done', 'refunding', 'undone')),
    created_at     BIGINT  NOT NULL,
    updated_at     BIGINT  NOT NULL
);
-- A listing has at most one swap in flight.
CREATE UNIQUE INDEX exchange_swaps_one_live ON exchange_swaps (listing_id)
    WHERE state NOT IN ('done', 'undone');
CREATE INDEX exchange_swaps_unfinished ON exchange_swaps (updated_at)
    WHERE state NOT IN ('done', 'undone');
CREATE INDEX exchange_swaps_by_buyer ON exchange_swaps (event_id, buyer)
    WHERE state NOT IN ('done', 'undone');
