-- Group commit in one round trip. The writer sends every commit of a batch in one call
-- and gets one row back per commit, in order. Each commit runs in its own
-- BEGIN … EXCEPTION block, which is a subtransaction: a refused commit (seat sold,
-- buyer over the limit, any other error) is undone alone and the others stay in the
-- caller's transaction. The function does not commit; the caller COMMITs and only
-- then answers anyone. Refusals come back by constraint name, so the adapter maps
-- `sold_seats_pkey` and `buyer_within_limit` to domain outcomes exactly as it does for
-- every other write. The state and event names are the domain's
-- (`OrderState::as_str`, `OrderEvent::as_str`, `OrderNotice::as_str` in the domain;
-- a test of the domain crate holds this text to them).
--
-- outcome: 'committed'; 'not_committable' (state = the order's state); 'missing' (no
-- such order); 'retry' (undone because it waited too long for a row another
-- transaction holds, see below); 'refused' (refused_by = the constraint, detail = for
-- sold_seats_pkey the clashing seat's label, else the error message).
--
-- Several writers (and nodes) run batches at once. A batch keeps every row it wrote
-- locked until its COMMIT, so a commit may wait for another batch, and two batches
-- can each wait for a seat the other sold. PostgreSQL would find that deadlock only
-- after deadlock_timeout (1 s by default, settable by superusers only) and a batch
-- may meet several in a row. So a commit waits at most lock_timeout (set for the
-- call only; a few batches' time) and is then undone with 'retry'; the adapter runs
-- it again in a later transaction, when the other batch has committed.

CREATE FUNCTION ledger_commit_batch(order_ids TEXT[], limits INTEGER[], times BIGINT[])
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
            -- The conditional move is also the read: it locks the row, waits for a
            -- racing node and rechecks the state, so no separate SELECT is needed.
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
                -- The same document the SQLite ledger writes (see the adapter's payload).
                INSERT INTO outbox (order_id, kind, payload, created_at)
                VALUES (o.id, 'order_committed', jsonb_build_object(
                    'order_id', o.id, 'event_id', o.event_id, 'buyer_id', o.buyer_id,
                    'hold_id', o.hold_id, 'seats', o.seats, 'total', o.total,
                    'currency', o.currency, 'committed_at', times[i]), times[i]);
            END IF;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            outcome := 'retry';
        WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS refused_by = CONSTRAINT_NAME,
                error_detail = PG_EXCEPTION_DETAIL, detail = MESSAGE_TEXT;
            outcome := 'refused';
            IF refused_by = 'sold_seats_pkey' THEN
                -- The key is in the detail (`Key (event_id, seat_id)=(7, S-1-3) already
                -- exists.`, in the server's lc_messages): the seat whose label closes it.
                -- `o` keeps the order read before the rollback.
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
