-- What the history trigger costs a commit on PostgreSQL: the commit's shape (an order's
-- row updated, then its history line inserted, per order, in one PL/pgSQL loop) over
-- 25,000 orders at a time, with no trigger, with the trigger on every line (migration
-- 0018), and with it only on lines that leave the state as it was (0020, where the
-- commit's line skips it), in turns. Run on a throw-away database of its own, dropped at
-- the end: psql -h 127.0.0.1 -U postgres -d test -f bench/history-trigger.sql
-- Each `SELECT commit_all` prints its time (\timing); divide by 25,000 for a line.
DROP DATABASE IF EXISTS boxoffice_bench_history_trigger;
CREATE DATABASE boxoffice_bench_history_trigger;
\c boxoffice_bench_history_trigger
CREATE TABLE orders (id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at BIGINT);
CREATE TABLE order_events (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, order_id TEXT NOT NULL, from_state TEXT, to_state TEXT NOT NULL, event TEXT NOT NULL, at BIGINT NOT NULL);
CREATE INDEX order_events_by_order ON order_events (order_id);
CREATE FUNCTION order_events_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM orders WHERE id = NEW.order_id FOR NO KEY UPDATE;
    NEW.id := nextval('order_events_id_seq');
    RETURN NEW;
END;
$$;
INSERT INTO orders SELECT 'o-' || g, 'authorized', 0 FROM generate_series(1, 200000) g;
VACUUM ANALYZE orders;
-- The commit's shape: per order, its row updated, then its line inserted.
CREATE FUNCTION commit_all(lo INT, hi INT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE o RECORD;
BEGIN
  FOR i IN lo..hi LOOP
    UPDATE orders SET state = 'committed', updated_at = i WHERE id = 'o-' || i RETURNING * INTO o;
    INSERT INTO order_events (order_id, from_state, to_state, event, at) VALUES (o.id, 'authorized', 'committed', 'committed', i);
  END LOOP;
END;
$$;
\timing on
-- In turns: none, every line, only state-keeping lines; again; every line, none.
SELECT commit_all(1, 25000);
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events FOR EACH ROW EXECUTE FUNCTION order_events_in_order();
SELECT commit_all(25001, 50000);
DROP TRIGGER order_events_in_order ON order_events;
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events FOR EACH ROW WHEN (NEW.from_state IS NOT DISTINCT FROM NEW.to_state) EXECUTE FUNCTION order_events_in_order();
SELECT commit_all(50001, 75000);
DROP TRIGGER order_events_in_order ON order_events;
SELECT commit_all(75001, 100000);
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events FOR EACH ROW EXECUTE FUNCTION order_events_in_order();
SELECT commit_all(100001, 125000);
DROP TRIGGER order_events_in_order ON order_events;
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events FOR EACH ROW WHEN (NEW.from_state IS NOT DISTINCT FROM NEW.to_state) EXECUTE FUNCTION order_events_in_order();
SELECT commit_all(125001, 150000);
DROP TRIGGER order_events_in_order ON order_events;
CREATE TRIGGER order_events_in_order BEFORE INSERT ON order_events FOR EACH ROW EXECUTE FUNCTION order_events_in_order();
SELECT commit_all(150001, 175000);
DROP TRIGGER order_events_in_order ON order_events;
SELECT commit_all(175001, 200000);
\c test
DROP DATABASE boxoffice_bench_history_trigger;
