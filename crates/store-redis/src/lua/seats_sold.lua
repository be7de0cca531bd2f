-- SeatArbiter::mark_seats_sold. ARGV: keep, then seat/buyer pairs. Replies {'ok', n}
-- with n the listed seats that were not sold before, or {'no_such_seat', seat} having
-- changed nothing.
local keep = tonumber(ARGV[1])
if not loaded() then return { 'unknown_event' } end
local pairs_, bad = seat_buyer_pairs(2)
if not pairs_ then return { 'no_such_seat', bad } end

local listed, order, held = {}, {}, false
for _, p in ipairs(pairs_) do
  local s, b = p[1], p[2]
  if listed[s] == nil and redis.call('GETBIT', SOLD, s) == 0 then
    listed[s] = b
    order[#order + 1] = s
    if redis.call('GETBIT', FREE, s) == 0 then held = true end
  end
end

-- A listed seat that is held: end its hold (sold as a whole if it is the listed sale
-- being recorded, released otherwise). Only drift gets here, so scanning the live
-- holds is acceptable.
if held then
  for _, nonce in ipairs(redis.call('ZRANGE', DL, 0, -1)) do
    local rec = redis.call('HGET', HOLDS, nonce)
    local h = rec and parse(rec)
    if h and is_live(h.st) then
      local touches, selling = false, moved('commit', h.st) ~= nil
      for _, s in ipairs(seat_list(h)) do
        if listed[s] ~= nil then touches = true end
        if listed[s] ~= h.b then selling = false end
      end
      if touches then
        if selling then sell_hold(nonce, h, keep) else end_hold(nonce, h, 'release', keep) end
      end
    end
  end
end

for _, s in ipairs(order) do
  -- Free now, unless a hold's own sale just sold it.
  if redis.call('GETBIT', FREE, s) == 1 then
    redis.call('SETBIT', FREE, s, 0)
    redis.call('ZREM', FREEZ, s)
    redis.call('SETBIT', SOLD, s, 1)
    redis.call('HINCRBY', META, 'sold', 1)
    redis.call('HINCRBY', TAKEN, listed[s], 1)
  end
end
return { 'ok', tostring(#order) }
