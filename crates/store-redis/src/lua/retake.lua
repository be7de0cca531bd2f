-- SeatArbiter::retake. ARGV: nonce, buyer, order, pinned_until, now, keep, then the
-- seat indices. Replies {'ok', record} or {error code, detail?}, checked in the order
-- the in-memory arbiter checks them.
local nonce, buyer, order, pinned, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local keep = tonumber(ARGV[6])
if not loaded() then return { 'unknown_event' } end
expire_due_unreported(now, keep)

local rec = redis.call('HGET', HOLDS, nonce)
if rec then
  local h = parse(rec)
  if h.st ~= 'R' and h.st ~= 'E' then
    -- Still live or sold for this order: a retry answers with the hold as it is.
    if h.st ~= 'H' and h.o == order then return { 'ok', rec } end
    return { 'wrong_state', h.st }
  end
end

local max = tonumber(redis.call('HGET', META, 'max'))
local cap = tonumber(redis.call('HGET', META, 'cap'))
local n = #ARGV - 6
if n == 0 or n > max then return { 'bad_quantity' } end
local seats, seen = {}, {}
for i = 7, #ARGV do
  local s = tonumber(ARGV[i])
  if seen[s] then return { 'bad_quantity' } end
  seen[s] = true
  seats[#seats + 1] = s
end
for _, s in ipairs(seats) do
  if s >= cap then return { 'no_such_seat', tostring(s) } end
end
if (tonumber(redis.call('HGET', TAKEN, buyer)) or 0) + n > max then
  return { 'limit_exceeded', tostring(max) }
end
for _, s in ipairs(seats) do
  if redis.call('GETBIT', FREE, s) == 0 then return { 'seat_unavailable', tostring(s) } end
end

local names, prices = {}, {}
for i, s in ipairs(seats) do
  local _, _, _, _, price = seat_info(s)
  names[i], prices[i] = tostring(s), string.format('%.0f', price)
  redis.call('SETBIT', FREE, s, 0)
  redis.call('ZREM', FREEZ, s)
end
redis.call('HINCRBY', TAKEN, buyer, n)
redis.call('HINCRBY', META, 'held', n)
redis.call('HINCRBY', META, 'active', 1)
redis.call('ZADD', DL, pinned, nonce)
-- Live again: the trimming of finished holds must not forget it.
redis.call('LREM', FIN, 0, nonce)
rec = format({ st = 'C', x = pinned, b = buyer, o = order,
  seats = table.concat(names, ','), prices = table.concat(prices, ',') })
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
