-- QueueStore::release_line_claim. KEYS[1]: the lease. ARGV[1]: its holder. Only the
-- holder gives it up: a lease that lapsed and was taken by another stays theirs.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
