-- VelocityStore::record. KEYS: one sorted set per counter. ARGV: now, a member name
-- unique to this call, then per counter: limit, window_ms. Adds an entry to each and
-- answers each one's count in its window (at most its limit: older entries are trimmed).
local now = tonumber(ARGV[1])
local member = ARGV[2]
local counts = {}
for i = 1, #KEYS do
  local limit = tonumber(ARGV[2 * i + 1])
  local window = tonumber(ARGV[2 * i + 2])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  redis.call('ZADD', KEYS[i], now, member)
  redis.call('ZREMRANGEBYRANK', KEYS[i], 0, -(limit + 1))
  redis.call('PEXPIRE', KEYS[i], window)
  counts[i] = redis.call('ZCARD', KEYS[i])
end
return counts
