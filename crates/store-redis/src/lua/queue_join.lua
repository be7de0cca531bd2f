-- QueueStore::join: the buyer's existing place, or a new one. KEYS: positions, state,
-- pool. ARGV: buyer, sale_open ('1' seals the pool if nobody has yet; '2' is
-- QueueStore::join_line: only into an opened line, else { '-1', '0' }). Before opening
-- the buyer goes to the pool at position 0 (drawn at opening); after, to the back of
-- the line. One step, so positions stay dense and unique.
if ARGV[2] == '2' and redis.call('HGET', KEYS[2], 'opened') ~= '1' then
  return { '-1', '0' }
end
local pos = redis.call('HGET', KEYS[1], ARGV[1])
if pos then return { pos, '0' } end
if ARGV[2] == '1' then redis.call('HSET', KEYS[2], 'opened', 1) end
local n = redis.call('HINCRBY', KEYS[2], 'len', 1)
if redis.call('HGET', KEYS[2], 'opened') == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], n)
  return { tostring(n), '1' }
end
redis.call('HINCRBY', KEYS[2], 'pool', 1)
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], 0)
return { '0', '1' }
