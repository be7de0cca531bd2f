-- SeatArbiter::pin. ARGV: nonce, order, pinned_until, now, keep.
local nonce, order, pinned, now, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if not loaded() then return { 'unknown_hold' } end
local rec = redis.call('HGET', HOLDS, nonce)
if not rec then return { 'unknown_hold' } end
local h = parse(rec)
if is_live(h.st) and tonumber(h.x) <= tonumber(now) then
  -- Its deadline has passed: expire it now rather than let it be paid for.
  local report = expire_one(nonce, keep)
  if report then report_later(report, keep) end
  return { 'expired' }
end
if h.st == 'E' then return { 'expired' } end
-- A retried pin for the same order answers with the hold as it is (P4).
if (h.st == 'C' or h.st == 'P') and h.o == order then return { 'ok', rec } end
local to = moved('checkout', h.st)
if not to then return { 'wrong_state', h.st } end
h.st, h.x, h.o = to, pinned, order
redis.call('ZADD', DL, pinned, nonce)
rec = format(h)
redis.call('HSET', HOLDS, nonce, rec)
return { 'ok', rec }
