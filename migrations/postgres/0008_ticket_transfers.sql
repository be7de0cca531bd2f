-- Ticket transfers (docs/ARCHITECTURE.md §9, "Transfers"), a detail for history lines
-- that move no state, and the commit without its old outbox notice.

-- The commit as 0002 wrote it, less its `order_committed` outbox row: the history line
-- it appends is announced by the outbox trigger (0007), and the notice (sequence 0)
-- was never relayed. The state and event names are the domain's (a test of the domain
-- crate holds this text to them).
CREATE OR REPLACE FUNCTION ledger_commit_batch(order_ids TEXT[], limits INTEGER[], times BIGINT[])
RETURNS TABLE (outcome TEXT, state TEXT, refused_by TEXT, detail TEXT)
LANGUAGE plpgsql SET lock_timeout = '100ms' AS $$
#variable_conflict use_column
DECLARE
    o orders%ROWTYPE;
    error_detail TEXT;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(order_ids), 0) LOOP
        outcome := 'committed';
        state := NULL;
        refused_by := NULL;
        detail := NULL;
        o := NULL;
        BEGIN
            UPDATE orders SET state = 'committed', updated_at = times[i]
            WHERE id = order_ids[i] AND state = 'authorized'
            RETURNING * INTO o;
            IF NOT FOUND THEN
                SELECT state INTO state FROM orders WHERE id = order_ids[i];
                outcome := CASE WHEN FOUND THEN 'not_committable' ELSE 'missing' END;
            ELSE
                INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at)
                SELECT o.event_id, s ->> 'seat_id', o.id, o.buyer_id, (s ->> 'price')::BIGINT, times[i]
                FROM jsonb_array_elements(o.seats) AS s;
                INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets)
                VALUES (o.event_id, o.buyer_id, jsonb_array_length(o.seats), limits[i])
                ON CONFLICT (event_id, buyer_id) DO UPDATE
                SET tickets = buyer_tickets.tickets + excluded.tickets,
                    max_tickets = excluded.max_tickets;
                INSERT INTO order_events (order_id, from_state, to_state, event, at)
                VALUES (o.id, 'authorized', 'committed', 'committed', times[i]);
            END IF;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            outcome := 'retry';
        WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS refused_by = CONSTRAINT_NAME,
                error_detail = PG_EXCEPTION_DETAIL, detail = MESSAGE_TEXT;
            outcome := 'refused';
            IF refused_by = 'sold_seats_pkey' THEN
                detail := coalesce(
                    (SELECT s ->> 'seat_id' FROM jsonb_array_elements(o.seats) AS s
                     WHERE strpos(error_detail, ', ' || (s ->> 'seat_id') || ')') > 0 LIMIT 1),
                    o.seats -> 0 ->> 'seat_id');
            END IF;
        END;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- A holder's offer of a ticket to another buyer. `version` is the ticket's version
-- when offered: the offer is good for that version only. An open offer (`offered`)
-- past `expires_at` is lapsed; it is written `expired` when the next offer of the
-- ticket finds it.
CREATE TABLE ticket_transfers (
    id          TEXT    PRIMARY KEY,
    ticket_id   TEXT    NOT NULL REFERENCES tickets (id),
    event_id    BIGINT  NOT NULL REFERENCES events (id),
    from_buyer  TEXT    NOT NULL,
    to_buyer    TEXT    NOT NULL CHECK (to_buyer != from_buyer),
    version     INTEGER NOT NULL CHECK (version > 0),
    state       TEXT    NOT NULL CHECK (state IN ('offered', 'accepted', 'cancelled', 'expired')),
    created_at  BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL,
    ended_at    BIGINT
);
-- At most one open offer per ticket: of two offers racing, the second meets this.
-- Pinned by the tickets case n_offers_and_accepts_racing_over_one_ticket_one_wins.
CREATE UNIQUE INDEX ticket_transfers_one_open ON ticket_transfers (ticket_id)
    WHERE state = 'offered';
CREATE INDEX ticket_transfers_by_sender ON ticket_transfers (from_buyer, created_at);
CREATE INDEX ticket_transfers_by_recipient ON ticket_transfers (to_buyer, created_at);

-- What a history line that is no state move says besides its name (a transfer's
-- ticket, sender and recipient); it goes out in the event's `detail`.
ALTER TABLE order_events ADD COLUMN detail JSONB;

CREATE OR REPLACE FUNCTION order_events_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n INTEGER;
BEGIN
    SELECT count(*) INTO n FROM order_events WHERE order_id = NEW.order_id AND id <= NEW.id;
    INSERT INTO outbox (order_id, kind, payload, created_at, seq, sale_event_id)
    SELECT o.id, 'order.' || NEW.event,
        jsonb_build_object(
            'id', o.id || '.' || n,
            'type', 'order.' || NEW.event,
            'sequence', n,
            'occurred_at', NEW.at,
            'order_id', o.id,
            'from_state', NEW.from_state,
            'to_state', NEW.to_state,
            'detail', NEW.detail,
            'order', jsonb_build_object(
                'event_id', o.event_id, 'buyer_id', o.buyer_id, 'hold_id', o.hold_id,
                'seats', o.seats, 'total', o.total, 'currency', o.currency)),
        NEW.at, n, o.event_id
    FROM orders o WHERE o.id = NEW.order_id;
    RETURN NULL;
END;
$$;
