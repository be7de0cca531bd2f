-- The history trigger (0018) took its order's row lock for every line, and ran a
-- PL/pgSQL call for it, at a cost of about a tenth of the server's CPU per order in
-- the on-sale's group commit. A line that changes the order's state (or writes its
-- first line) already holds that lock: the same statement or transaction updated the
-- order's row first (or inserted it, unseen by anyone else), and its id, the column's
-- default, is drawn after that. Only a line that leaves the state as it was (a transfer,
-- a rename, a single ticket's cancellation), written by a transaction that locked only a
-- ticket, needs the trigger to lock the order before its id is drawn.
DROP TRIGGER order_events_in_order ON order_events;
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events
    FOR EACH ROW WHEN (NEW.from_state IS NOT DISTINCT FROM NEW.to_state)
    EXECUTE FUNCTION order_events_in_order();
