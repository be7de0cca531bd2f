-- Order events out (docs/ARCHITECTURE.md, "Order events out"). Every line appended to an
-- order's history becomes an outbox row in the same transaction, by trigger, so a new
-- order move gets its event without any code of its own. Each outbox row then gets one
-- delivery row per sink (webhook endpoint, NATS), which the relays claim with a lease and
-- delete once the sink has it.

-- `seq` is the history line's place in its order's history (1 for `created`): with the
-- order id it makes the event id consumers dedupe on (`<order_id>.<seq>`). The commit's
-- and cancellation's own notices written before this (`order_committed`,
-- `order_cancelled`) keep seq 0 and are never relayed: the history line announces them.
ALTER TABLE outbox ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN sale_event_id INTEGER NOT NULL DEFAULT 0;
UPDATE outbox SET published_at = created_at WHERE published_at IS NULL;

-- Where events go. `webhook`: an operator's endpoint (url, signing secret); `nats`: the
-- JetStream sink, registered by the nodes configured with one.
CREATE TABLE outbox_sinks (
    id          TEXT    PRIMARY KEY,
    kind        TEXT    NOT NULL CHECK (kind IN ('webhook', 'nats')),
    url         TEXT    NOT NULL,
    secret      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

-- What each sink has still to receive. A row is claimed by one relay at a time (lease),
-- deleted once delivered, and kept with dead_at set when its attempts or age ran out.
CREATE TABLE outbox_deliveries (
    sink            TEXT    NOT NULL REFERENCES outbox_sinks (id) ON DELETE CASCADE,
    outbox_id       INTEGER NOT NULL REFERENCES outbox (id),
    order_id        TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER NOT NULL DEFAULT 0,
    dead_at         INTEGER,
    last_error      TEXT,
    PRIMARY KEY (sink, outbox_id)
) WITHOUT ROWID;
-- An order's earlier events for a sink, found while claiming a later one.
CREATE INDEX outbox_deliveries_by_order ON outbox_deliveries (sink, order_id, outbox_id)
    WHERE dead_at IS NULL;
CREATE INDEX outbox_deliveries_due ON outbox_deliveries (next_attempt_at)
    WHERE dead_at IS NULL;

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
            'order', json_object(
                'event_id', o.event_id, 'buyer_id', o.buyer_id, 'hold_id', o.hold_id,
                'seats', json(o.seats), 'total', o.total, 'currency', o.currency)),
        NEW.at, s.seq, o.event_id
    FROM orders o,
        (SELECT count(*) AS seq FROM order_events
         WHERE order_id = NEW.order_id AND id <= NEW.id) s
    WHERE o.id = NEW.order_id;
END;

CREATE TRIGGER outbox_to_sinks AFTER INSERT ON outbox WHEN NEW.seq > 0
BEGIN
    INSERT INTO outbox_deliveries (sink, outbox_id, order_id, created_at, next_attempt_at)
    SELECT id, NEW.id, NEW.order_id, NEW.created_at, NEW.created_at FROM outbox_sinks;
END;
