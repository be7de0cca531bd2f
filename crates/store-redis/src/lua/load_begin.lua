-- Starts a load: forgets the event (marker first, so nobody treats it as loaded) and
-- records this loader's token; every later step of the load checks it, so a second,
-- concurrent load makes this one fail instead of mixing their halves. ARGV: token, ttl_ms.
redis.call('DEL', META, FREE, SOLD, LAYOUT, FREEZ, HOLDS, DL, TAKEN, UNREP, FIN)
redis.call('SET', LOADING, ARGV[1], 'PX', ARGV[2])
return 'ok'
