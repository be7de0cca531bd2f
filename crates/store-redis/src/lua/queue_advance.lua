-- QueueStore::advance: serving_up_to moves forward to ARGV[1] (capped at the line's
-- length, never backwards); ARGV[2] is now. KEYS[1]: state. Replies the state.
local s = redis.call('HMGET', KEYS[1], 'len', 'serving', 'sold_out', 'at')
local len, serving = tonumber(s[1]) or 0, tonumber(s[2]) or 0
local target = math.min(tonumber(ARGV[1]), len)
if len > 0 and target > serving then
  redis.call('HSET', KEYS[1], 'serving', target, 'at', ARGV[2])
  return { tostring(len), tostring(target), s[3] or '0', ARGV[2] }
end
return { tostring(len), tostring(serving), s[3] or '0', s[4] or '0' }
