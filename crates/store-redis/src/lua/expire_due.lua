-- SeatArbiter::expire_due. ARGV: now, limit, keep. Replies a list of "nonce|record":
-- first the expiries hold/pin already did, then due holds expired here, each hold's
-- seats back in stock in this same step (P3: exactly once).
local now, limit, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
if limit <= 0 or not loaded() then return out end
local waiting = redis.call('LPOP', UNREP, limit)
if waiting then
  for _, r in ipairs(waiting) do out[#out + 1] = r end
end
while #out < limit do
  local due = redis.call('ZRANGEBYSCORE', DL, '-inf', now, 'LIMIT', 0, limit - #out)
  if #due == 0 then break end
  for _, nonce in ipairs(due) do
    local r = expire_one(nonce, keep)
    if r then out[#out + 1] = r end
  end
end
return out
