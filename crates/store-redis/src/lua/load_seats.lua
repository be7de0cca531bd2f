-- One chunk of a load. ARGV: token, layout byte offset, layout bytes, then score/seat
-- pairs of the chunk's free seats.
if redis.call('GET', LOADING) ~= ARGV[1] then return 'superseded' end
redis.call('SETRANGE', LAYOUT, ARGV[2], ARGV[3])
if #ARGV > 3 then redis.call('ZADD', FREEZ, unpack(ARGV, 4)) end
return 'ok'
