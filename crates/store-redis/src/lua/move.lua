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
if move == 'S' then return { 'ok', sell_hold(nonce, h, keep) } end
h.st = done
rec = format(h)
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
