-- A swap whose ticket could not move (its buyer at the event's limit by then) goes to
-- `refunding` and its listing opens again in the same step, but the one-live-swap index
-- still counted the refunding swap: every other buyer's reservation of the reopened
-- listing failed on it (a store error, 503) until the refund was through. A refunding
-- swap holds its listing no more.
DROP INDEX exchange_swaps_one_live;
CREATE UNIQUE INDEX exchange_swaps_one_live ON exchange_swaps (listing_id)
    WHERE state NOT IN ('done', 'undone', 'refunding');
