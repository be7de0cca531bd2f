-- SeatArbiter::retake. ARGV: nonce, buyer, order, pinned_until, now, keep, replacing (''
-- for none), then the seat indices. Replies {'ok', record} or {error code, detail?},
-- checked in the order the in-memory arbiter checks them.
local nonce, buyer, order, pinned, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local keep, replacing = tonumber(ARGV[6]), ARGV[7]
if not loaded() then return { 'unknown_event' } end
expire_due_unreported(now, keep)

local rec = redis.call('HGET', HOLDS, nonce)
-- A hold still remembered keeps the key it was taken with.
local key = ''
if rec then
  local h = parse(rec)
  key = h.k
  local for_this_order = h.st ~= 'H' and h.o == order
  local to = moved('repin', h.st)
  if not for_this_order and replacing ~= '' and h.o == replacing and to then
    -- Pinned for the order the ledger has, in place: its seats stay taken.
    h.st, h.x, h.o = to, pinned, order
    redis.call('ZADD', DL, pinned, nonce)
    rec = format(h)
    redis.call('HSET', HOLDS, nonce, rec)
    return { 'ok', rec }
  end
  if not moved('retake', h.st) then
    -- Still live or sold for this order: a retry answers with the hold as it is.
    if for_this_order then return { 'ok', rec } end
    return { 'wrong_state', h.st }
  end
end

local max = tonumber(redis.call('HGET', META, 'max'))
local cap = tonumber(redis.call('HGET', META, 'cap'))
local seats, refused = named_seats(8, max, cap)
if not seats then return refused end
refused = over_limit(buyer, #seats, max) or not_free(seats)
if refused then return refused end

local names, prices = take_seats(nonce, buyer, seats, pinned)
-- Live again: the trimming of finished holds must not forget it.
redis.call('LREM', FIN, 0, nonce)
-- A retaken hold is checking out for its order (the retake move of MOVE_LIST).
rec = format({ st = 'C', x = pinned, b = buyer, o = order, seats = names, prices = prices, k = key })
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
