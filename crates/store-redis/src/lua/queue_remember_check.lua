-- QueueStore::remember_check: the first owner of a human check's digest, kept for
-- ARGV[2] milliseconds. KEYS: the check's key. ARGV: owner (16 raw bytes), ttl ms.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return ARGV[1]
end
return redis.call('GET', KEYS[1])
