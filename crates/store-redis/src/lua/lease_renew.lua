-- QueueStore::renew_line_claim. KEYS[1]: the lease. ARGV: its holder, ttl_ms. Only a
-- lease still the holder's is renewed: one that lapsed stays lost, even if nobody took
-- it since (the holder cannot tell that from another having taken it and let go).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
