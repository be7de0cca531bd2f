-- Ticket transfers (docs/ARCHITECTURE.md §9, "Transfers"): a holder's offer of a ticket
-- to another buyer, and how it ended. Times are Unix milliseconds.

-- `version` is the ticket's version when offered: the offer is good for that version
-- only. An open offer (`offered`) past `expires_at` is lapsed; it is written `expired`
-- when the next offer of the ticket or an accept finds it.
CREATE TABLE ticket_transfers (
    id          TEXT    PRIMARY KEY,
    ticket_id   TEXT    NOT NULL REFERENCES tickets (id),
    event_id    INTEGER NOT NULL REFERENCES events (id),
    from_buyer  TEXT    NOT NULL,
    to_buyer    TEXT    NOT NULL CHECK (to_buyer != from_buyer),
    version     INTEGER NOT NULL CHECK (version > 0),
    state       TEXT    NOT NULL CHECK (state IN ('offered', 'accepted', 'cancelled', 'expired')),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    ended_at    INTEGER
) WITHOUT ROWID;
-- At most one open offer per ticket: of two offers racing, the second meets this.
-- Pinned by the tickets case n_offers_and_accepts_racing_over_one_ticket_one_wins.
CREATE UNIQUE INDEX ticket_transfers_one_open ON ticket_transfers (ticket_id)
    WHERE state = 'offered';
CREATE INDEX ticket_transfers_by_sender ON ticket_transfers (from_buyer, created_at);
CREATE INDEX ticket_transfers_by_recipient ON ticket_transfers (to_buyer, created_at);

-- What a history line that is no state move says besides its name (a transfer's
-- ticket, sender and recipient), as JSON; it goes out in the event's `detail`.
ALTER TABLE order_events ADD COLUMN detail TEXT;

DROP TRIGGER order_events_to_outbox;
CREATE TRIGGER order_events_to_outbox AFTER INSERT ON order_events
BEGIN
    INSERT INTO outbox (order_id, kind, payload, created_at, seq, sale_event_id)
    SELECT o.id, 'order.' || NEW.event,
        json_object(
            'id', o.id || '.' || s.seq,
            'type', 'order.' || NEW.event,
            'sequence', s.seq,
            'occurred_at', NEW.at,
            'order_id', o.id,
            'from_state', NEW.from_state,
            'to_state', NEW.to_state,
            'detail', json(NEW.detail),
            'order', json_object(
                'event_id', o.event_id, 'buyer_id', o.buyer_id, 'hold_id', o.hold_id,
                'seats', json(o.seats), 'total', o.total, 'currency', o.currency)),
        NEW.at, s.seq, o.event_id
    FROM orders o,
        (SELECT count(*) AS seq FROM order_events
         WHERE order_id = NEW.order_id AND id <= NEW.id) s
    WHERE o.id = NEW.order_id;
END;
