-- VelocityStore::link. KEYS[1]: the cluster's set of members, KEYS[2]: the dimension's
-- ranking (cluster key -> members). ARGV: member, most (-1: no limit), cap, ttl_ms,
-- cluster key, ranked (how many clusters the ranking keeps). Answers {1, n} joined or
-- {0, n} refused, n the cluster's members.
local member, most, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl, name, ranked = ARGV[4], ARGV[5], tonumber(ARGV[6])
local n = redis.call('SCARD', KEYS[1])
local joined = 1
if redis.call('SISMEMBER', KEYS[1], member) == 0 then
  if most >= 0 and n >= most then
    joined = 0
  elseif n < cap then
    redis.call('SADD', KEYS[1], member)
    n = n + 1
  end
end
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('ZADD', KEYS[2], n, name)
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(ranked + 1))
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return {joined, n}
