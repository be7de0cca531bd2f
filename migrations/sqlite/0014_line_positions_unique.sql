-- P7: a position in an event's line belongs to one buyer. A queue store that fell
-- behind the ledger (a line restored while a join's journal write was in flight, a
-- promoted Redis replica that missed the last joins) may hand out a position the
-- ledger already gave someone: the first buyer journaled at it keeps it, and the
-- other's join sees its record refused and is placed again.
DROP INDEX line_places_in_order;
CREATE UNIQUE INDEX line_places_one_buyer_per_position ON line_places (event_id, position);
