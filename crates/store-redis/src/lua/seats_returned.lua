-- SeatArbiter::return_sold_seats. ARGV: seat/buyer pairs. Each seat still sold goes
-- back to stock and out of its buyer's count. Replies {'ok', n} with n the seats that
-- came back, or {'no_such_seat', seat} having changed nothing.
if not loaded() then return { 'unknown_event' } end
local pairs_, bad = seat_buyer_pairs(1)
if not pairs_ then return { 'no_such_seat', bad } end
local back = 0
for _, p in ipairs(pairs_) do
  local s, b = p[1], p[2]
  -- A seat listed twice, or returned before, is no longer sold.
  if redis.call('GETBIT', SOLD, s) == 1 then
    redis.call('SETBIT', SOLD, s, 0)
    put_back(s)
    redis.call('HINCRBY', META, 'sold', -1)
    if redis.call('HINCRBY', TAKEN, b, -1) <= 0 then redis.call('HDEL', TAKEN, b) end
    back = back + 1
  end
end
return { 'ok', tostring(back) }
