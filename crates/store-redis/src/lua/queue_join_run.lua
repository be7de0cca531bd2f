-- QueueStore::join and join_line (queue_join.lua). KEYS: positions, state, pool. ARGV:
-- buyer, sale_open.
return queue_join(KEYS, ARGV)
