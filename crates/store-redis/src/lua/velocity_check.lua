-- VelocityStore::check. KEYS: one sorted set of entry times per counter. ARGV: now, a
-- member name unique to this call, then per counter: limit, window_ms, add (0/1).
-- Answers {-1} when admitted, or {index (0-based), until} of the first full counter;
-- nothing is added unless every counter has room.
local now = tonumber(ARGV[1])
local member = ARGV[2]
for i = 1, #KEYS do
  local limit = tonumber(ARGV[3 * i])
  local window = tonumber(ARGV[3 * i + 1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  local n = redis.call('ZCARD', KEYS[i])
  if n >= limit then
    local at = redis.call('ZRANGE', KEYS[i], n - limit, n - limit, 'WITHSCORES')
    return {i - 1, tonumber(at[2]) + window}
  end
end
for i = 1, #KEYS do
  if ARGV[3 * i + 2] == '1' then
    local limit = tonumber(ARGV[3 * i])
    redis.call('ZADD', KEYS[i], now, member)
    redis.call('ZREMRANGEBYRANK', KEYS[i], 0, -(limit + 1))
    redis.call('PEXPIRE', KEYS[i], ARGV[3 * i + 1])
  end
end
return {-1}
