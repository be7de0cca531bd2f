-- P7: a position in an event's line belongs to one buyer. A queue store that fell
-- behind the ledger (a line restored while a join's journal write was in flight, a
-- promoted Redis replica that missed the last joins) may hand out a position the
-- ledger already gave someone: the first buyer journaled at it keeps it, and the
-- other's join sees its record refused and is placed again.
-- A journal that already holds one position for two buyers keeps the first journaled
-- there and moves the others, in join order, past the end of their line.
WITH nth AS (
    SELECT event_id, buyer_id, joined_at,
           row_number() OVER (PARTITION BY event_id, position ORDER BY joined_at, buyer_id) AS n
    FROM line_places
), moved AS (
    SELECT event_id, buyer_id,
           (SELECT max(position) FROM line_places m WHERE m.event_id = nth.event_id)
             + row_number() OVER (PARTITION BY event_id ORDER BY joined_at, buyer_id) AS to_position
    FROM nth WHERE n > 1
)
UPDATE line_places SET position = moved.to_position
FROM moved
WHERE line_places.event_id = moved.event_id AND line_places.buyer_id = moved.buyer_id;

DROP INDEX line_places_in_order;
CREATE UNIQUE INDEX line_places_one_buyer_per_position ON line_places (event_id, position);
