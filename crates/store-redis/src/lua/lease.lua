-- SeatArbiter::sweep_lease. KEYS[1]: the lease. ARGV: node, ttl_ms. The holder (or
-- anyone, when nobody holds it) takes it for ttl_ms and is answered -1; anyone else
-- is answered how many ms the holder still has.
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return -1
end
return math.max(redis.call('PTTL', KEYS[1]), 0)
