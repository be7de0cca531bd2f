-- mark_uncertain ('U'), mark_sold ('S') and release ('R'). ARGV: nonce, move, keep.
-- Repeating a move that already happened answers with the hold as it is (P4).
local nonce, move, keep = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not loaded() then return { 'unknown_hold' } end
local rec = redis.call('HGET', HOLDS, nonce)
if not rec then return { 'unknown_hold' } end
local h = parse(rec)

if move == 'R' then
  if h.st == 'R' or h.st == 'E' then return { 'ok', rec } end
  if not is_live(h.st) then return { 'wrong_state', h.st } end
  return { 'ok', end_hold(nonce, h, 'R', keep) }
end

local done, from = (move == 'U') and 'P' or 'S', (move == 'U') and { C = true } or { C = true, P = true }
if h.st == done then return { 'ok', rec } end
if h.st == 'E' then return { 'expired' } end
if not from[h.st] then return { 'wrong_state', h.st } end
h.st = done
if move == 'S' then
  -- The seats leave stock for good; the buyer's count stays (held + sold).
  local seats = seat_list(h)
  for _, s in ipairs(seats) do redis.call('SETBIT', SOLD, s, 1) end
  redis.call('HINCRBY', META, 'held', -#seats)
  redis.call('HINCRBY', META, 'sold', #seats)
  redis.call('HINCRBY', META, 'active', -1)
  redis.call('ZREM', DL, nonce)
end
rec = format(h)
redis.call('HSET', HOLDS, nonce, rec)
if move == 'S' then finished(nonce, keep) end
return { 'ok', rec }
