-- VelocityStore::link_all. KEYS: for each join, the cluster's set of members and its
-- dimension's ranking (cluster key -> members). ARGV[1]: how many clusters a ranking
-- keeps; then for each join: member, most (-1: no limit), cap, ttl_ms, cluster key.
-- Answers {1, n1, n2, ...} all joined (n the clusters' members, in order) or
-- {0, index, n} refused, index counted from 0, nothing changed.
local ranked = tonumber(ARGV[1])
local joins = #KEYS / 2
for i = 1, joins do
  local set, a = KEYS[2 * i - 1], 2 + (i - 1) * 5
  local member, most = ARGV[a], tonumber(ARGV[a + 1])
  if most >= 0 and redis.call('SISMEMBER', set, member) == 0 then
    local n = redis.call('SCARD', set)
    if n >= most then
      return {0, i - 1, n}
    end
  end
end
local out = {1}
for i = 1, joins do
  local set, ranking, a = KEYS[2 * i - 1], KEYS[2 * i], 2 + (i - 1) * 5
  local member, cap = ARGV[a], tonumber(ARGV[a + 2])
  local ttl, name = ARGV[a + 3], ARGV[a + 4]
  local n = redis.call('SCARD', set)
  if n < cap and redis.call('SISMEMBER', set, member) == 0 then
    redis.call('SADD', set, member)
    n = n + 1
  end
  if n > 0 then
    redis.call('PEXPIRE', set, ttl)
    redis.call('ZADD', ranking, n, name)
    redis.call('ZREMRANGEBYRANK', ranking, 0, -(ranked + 1))
    redis.call('PEXPIRE', ranking, ttl)
  end
  out[#out + 1] = n
end
return out
