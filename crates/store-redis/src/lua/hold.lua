-- SeatArbiter::hold. ARGV: nonce, buyer, expires_at, now, keep, kind, then
--   kind 'N': the seat indices; kind 'B': section, quantity, adjacent (1|0).
-- Replies {'ok', record} or {error code, detail?}.
local nonce, buyer, expires, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local keep, kind = tonumber(ARGV[5]), ARGV[6]
if not loaded() then return { 'unknown_event' } end
expire_due_unreported(now, keep)

local rec = redis.call('HGET', HOLDS, nonce)
if rec then
  -- The same hold id again is a retried request: answer as the first time.
  local h = parse(rec)
  if h.b == buyer then return { 'ok', rec } end
  return { 'wrong_state', h.st }
end

local max = tonumber(redis.call('HGET', META, 'max'))
local cap = tonumber(redis.call('HGET', META, 'cap'))
local function within_limit(q)
  return (tonumber(redis.call('HGET', TAKEN, buyer)) or 0) + q <= max
end

local seats
if kind == 'N' then
  local n = #ARGV - 6
  if n == 0 or n > max then return { 'bad_quantity' } end
  seats = {}
  local seen = {}
  for i = 7, #ARGV do
    local s = tonumber(ARGV[i])
    if seen[s] then return { 'bad_quantity' } end
    seen[s] = true
    seats[#seats + 1] = s
  end
  for _, s in ipairs(seats) do
    if s >= cap then return { 'no_such_seat', tostring(s) } end
  end
  if not within_limit(n) then return { 'limit_exceeded', tostring(max) } end
  for _, s in ipairs(seats) do
    if redis.call('GETBIT', FREE, s) == 0 then return { 'seat_unavailable', tostring(s) } end
  end
else
  local section, q, adjacent = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1'
  if q == 0 or q > max then return { 'bad_quantity' } end
  if not within_limit(q) then return { 'limit_exceeded', tostring(max) } end
  local flags = redis.call('HGET', META, 'seated')
  if section >= #flags then return { 'no_such_section' } end
  seats = pick(section, q, adjacent, string.sub(flags, section + 1, section + 1) == '1', cap)
  if not seats then return { 'sold_out' } end
end

local names, prices = {}, {}
for i, s in ipairs(seats) do
  local _, _, _, _, price = seat_info(s)
  names[i], prices[i] = tostring(s), string.format('%.0f', price)
  redis.call('SETBIT', FREE, s, 0)
  redis.call('ZREM', FREEZ, s)
end
redis.call('HINCRBY', TAKEN, buyer, #seats)
redis.call('HINCRBY', META, 'held', #seats)
redis.call('HINCRBY', META, 'active', 1)
redis.call('ZADD', DL, expires, nonce)
rec = format({ st = 'H', x = expires, b = buyer, o = '-',
  seats = table.concat(names, ','), prices = table.concat(prices, ',') })
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
