-- A ticket that stands apart from its order (docs/ARCHITECTURE.md §9, "Undoing a sale
-- after the exchange"). NULL: the ticket follows its order (valid while the order is
-- confirmed, revoked with it). Otherwise the state the door and every check read
-- instead of the order's: 'confirmed' for a ticket sold on through the exchange (its
-- swap buyer paid for it, so cancelling the seller's order leaves it alone);
-- 'refunded' once its swap buyer's money went back (the event cancelled after the
-- swap); 'refunding' for a ticket the operator cancelled on its own (claimed, its seat
-- given back, its part of the payment on its way back) and 'cancelled' once that part
-- is back. `refund_amount` is that part (the seat's price in its order) and
-- `cancelled_at` when the cancellation was claimed.
ALTER TABLE tickets ADD COLUMN own_state TEXT
    CHECK (own_state IS NULL OR own_state IN ('confirmed', 'refunded', 'refunding', 'cancelled'));
ALTER TABLE tickets ADD COLUMN refund_amount INTEGER;
ALTER TABLE tickets ADD COLUMN cancelled_at INTEGER;
CREATE INDEX tickets_refunding ON tickets (cancelled_at) WHERE own_state = 'refunding';

-- Tickets exchanged before this column existed.
UPDATE tickets SET own_state = 'confirmed'
WHERE id IN (SELECT ticket_id FROM exchange_swaps WHERE state IN ('moved', 'done'));

-- When an event's cancellation claimed the refund of a finished swap's buyer (the swap
-- then goes done → refunding → undone). The seller's payout was made before, so it
-- still counts against the seller's order, which gives back only what is left.
ALTER TABLE exchange_swaps ADD COLUMN cancelled_at INTEGER;
