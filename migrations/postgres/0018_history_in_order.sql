-- An order's history lines written at once by transactions that lock only a ticket of
-- it (a rename and a transfer, a single ticket's cancellation) were numbered from what
-- each saw: both counted the same committed lines, went out with the same event id
-- (`<order>.<sequence>`), and a consumer that deduplicates on it (NATS JetStream's
-- Nats-Msg-Id among them) dropped one. A line now takes its order's row lock before it
-- takes its id, so the ids of an order's lines follow the order in which their
-- transactions hold that lock: when a line counts the lines at or before it
-- (order_events_to_outbox), every earlier one has committed or is its own statement's.
CREATE FUNCTION order_events_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM orders WHERE id = NEW.order_id FOR NO KEY UPDATE;
    NEW.id := nextval('order_events_id_seq');
    RETURN NEW;
END;
$$;

CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events
    FOR EACH ROW EXECUTE FUNCTION order_events_in_order();
