-- SeatArbiter::hold. ARGV: nonce, buyer, expires_at, now, keep, key ('' for none), kind,
--   then kind 'N': the seat indices; kind 'B': section, quantity, adjacent (1|0).
-- Replies {'ok', record} or {error code, detail?}.
local nonce, buyer, expires, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local keep, key, kind = tonumber(ARGV[5]), ARGV[6], ARGV[7]
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

local seats, refused
if kind == 'N' then
  seats, refused = named_seats(8, max, cap)
  if not seats then return refused end
  refused = over_limit(buyer, #seats, max) or not_free(seats)
  if refused then return refused end
else
  local section, q, adjacent = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10] == '1'
  if q == 0 or q > max then return { 'bad_quantity' } end
  refused = over_limit(buyer, q, max)
  if refused then return refused end
  local flags = redis.call('HGET', META, 'seated')
  if section >= #flags then return { 'no_such_section' } end
  seats = pick(section, q, adjacent, string.sub(flags, section + 1, section + 1) == '1', cap)
  if not seats then return { 'sold_out' } end
end

local names, prices = take_seats(nonce, buyer, seats, expires)
rec = format({ st = 'H', x = expires, b = buyer, o = '-', seats = names, prices = prices, k = key })
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
