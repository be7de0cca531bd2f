-- Ends a load: bitmaps, counters, and the "loaded" marker last of all.
-- ARGV: token, free bitmap, sold bitmap, capacity, max per buyer, seated flags, sold.
if redis.call('GET', LOADING) ~= ARGV[1] then return 'superseded' end
-- SET, not SETRANGE: the keys must exist even for an event with no seats.
if redis.call('EXISTS', LAYOUT) == 0 then redis.call('SET', LAYOUT, '') end
redis.call('SET', FREE, ARGV[2])
redis.call('SET', SOLD, ARGV[3])
redis.call('HSET', META, 'cap', ARGV[4], 'max', ARGV[5], 'seated', ARGV[6],
  'held', 0, 'sold', ARGV[7], 'active', 0)
redis.call('HSET', META, 'loaded', '1')
redis.call('DEL', LOADING, CLAIM)
return 'ok'
