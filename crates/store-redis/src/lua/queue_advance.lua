-- QueueStore::advance: serving_up_to moves forward to ARGV[1] (capped at the line's
-- length, never backwards); ARGV[2] is now. KEYS: state, admissions (a sorted set of
-- '<serving>:<now>' by serving, one per batch). Replies the state fields.
local len = tonumber(redis.call('HGET', KEYS[1], 'len')) or 0
local serving = tonumber(redis.call('HGET', KEYS[1], 'serving')) or 0
local target = math.min(tonumber(ARGV[1]), len)
if len > 0 and target > serving then
  redis.call('HSET', KEYS[1], 'serving', target, 'at', ARGV[2])
  redis.call('ZADD', KEYS[2], target, string.format('%d', target) .. ':' .. ARGV[2])
end
return redis.call('HMGET', KEYS[1], 'len', 'serving', 'sold_out', 'at', 'pool', 'opened',
  'placed', 'finished')
