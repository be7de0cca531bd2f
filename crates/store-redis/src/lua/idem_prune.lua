-- IdempotencyStore::prune, one shard. KEYS: the shard's index, its node heartbeats.
-- ARGV: before (ms), most records to forget, record key prefix. Forgets records claimed
-- before `before` (oldest first) and heartbeats older than that; replies how many
-- records went.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[3] .. id)
  redis.call('ZREM', KEYS[1], id)
end
local beats = redis.call('HGETALL', KEYS[2])
for i = 1, #beats, 2 do
  if tonumber(beats[i + 1]) < tonumber(ARGV[1]) then redis.call('HDEL', KEYS[2], beats[i]) end
end
return #ids
