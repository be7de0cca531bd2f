-- SeatArbiter::give_sold_seat. ARGV: seat, from, to. A seat still sold counts against
-- `to` from now on and no longer against `from`: replies {'ok', '1'}. Any other seat
-- changes nothing: {'ok', '0'}. {'no_such_seat', seat} for a seat the event lacks.
if not loaded() then return { 'unknown_event' } end
local cap = tonumber(redis.call('HGET', META, 'cap'))
local s, from, to = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not s or s < 0 or s >= cap then return { 'no_such_seat', ARGV[1] } end
if redis.call('GETBIT', SOLD, s) == 0 then return { 'ok', '0' } end
if redis.call('HINCRBY', TAKEN, from, -1) <= 0 then redis.call('HDEL', TAKEN, from) end
redis.call('HINCRBY', TAKEN, to, 1)
return { 'ok', '1' }
