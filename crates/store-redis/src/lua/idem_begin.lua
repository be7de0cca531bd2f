-- IdempotencyStore::begin. KEYS[1]: the record. ARGV: fingerprint, now, lease_ms,
-- retention_ms. Replies {'proceed'} | {'mismatch'} | {'in_flight'} | {'replay', status, body}.
local r = redis.call('HMGET', KEYS[1], 'fp', 'lease', 'status', 'body')
local now = tonumber(ARGV[2])
if r[1] then
  if r[1] ~= ARGV[1] then return { 'mismatch' } end
  if r[3] then return { 'replay', r[3], r[4] or '' } end
  if tonumber(r[2]) > now then return { 'in_flight' } end
  -- The first attempt's lease lapsed (it crashed): this retry takes over.
end
redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'lease', string.format('%.0f', now + tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return { 'proceed' }
