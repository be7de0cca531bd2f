-- QueueStore::join: the buyer's existing place, or the next one. KEYS: positions, state.
-- ARGV: buyer. Counter and place in one step, so positions stay dense and unique.
local pos = redis.call('HGET', KEYS[1], ARGV[1])
if pos then return { pos, '0' } end
local n = redis.call('HINCRBY', KEYS[2], 'len', 1)
redis.call('HSET', KEYS[1], ARGV[1], n)
return { tostring(n), '1' }
