-- SeatArbiter::give_sold_seat. ARGV: to, then the seat/buyer pair given (seat, from).
-- A seat still sold counts against `to` from now on and no longer against `from`:
-- replies {'ok', '1'}. Any other seat changes nothing: {'ok', '0'}. {'no_such_seat',
-- seat} for a seat the event lacks.
if not loaded() then return { 'unknown_event' } end
local to = ARGV[1]
local given, bad = seat_buyer_pairs(2)
if not given then return { 'no_such_seat', bad } end
local s, from = given[1][1], given[1][2]
if redis.call('GETBIT', SOLD, s) == 0 then return { 'ok', '0' } end
if redis.call('HINCRBY', TAKEN, from, -1) <= 0 then redis.call('HDEL', TAKEN, from) end
redis.call('HINCRBY', TAKEN, to, 1)
return { 'ok', '1' }
