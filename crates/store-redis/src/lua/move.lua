-- mark_uncertain, mark_sold, release and release_held. ARGV: nonce, move
-- ('payment_uncertain', 'commit' or 'release', names in MOVE_LIST, or 'release_held'),
-- keep, and for 'release_held' the buyer. Legality is the generated MOVE_LIST;
-- repeating a move that already happened answers with the hold as it is (P4).
local nonce, move, keep = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not loaded() then return { 'unknown_hold' } end
local rec = redis.call('HGET', HOLDS, nonce)
if not rec then return { 'unknown_hold' } end
local h = parse(rec)

-- A buyer's own release: only their hold, only while held; {'ok', record, released
-- now '1'|'0'}.
if move == 'release_held' then
  if h.b ~= ARGV[4] then return { 'unknown_hold' } end
  if h.st == 'R' or h.st == 'E' then return { 'ok', rec, '0' } end
  if h.st ~= 'H' then return { 'wrong_state', h.st } end
  return { 'ok', end_hold(nonce, h, 'release', keep), '1' }
end

local to = moved(move, h.st)

if move == 'release' then
  if h.st == 'R' or h.st == 'E' then return { 'ok', rec } end
  if not to then return { 'wrong_state', h.st } end
  return { 'ok', end_hold(nonce, h, move, keep) }
end

-- Where this move leads (from any state it is legal in): being there already is a retry.
local done = string.match(MOVE_LIST, ' ' .. move .. ':%a>(%a)')
if h.st == done then return { 'ok', rec } end
if h.st == 'E' then return { 'expired' } end
if not to then return { 'wrong_state', h.st } end
if move == 'commit' then return { 'ok', sell_hold(nonce, h, keep) } end
h.st = to
rec = format(h)
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
