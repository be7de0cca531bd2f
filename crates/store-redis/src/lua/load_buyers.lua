-- One chunk of a load: seats already sold per buyer. ARGV: token, then buyer/count pairs.
if redis.call('GET', LOADING) ~= ARGV[1] then return 'superseded' end
redis.call('HSET', TAKEN, unpack(ARGV, 2))
return 'ok'
