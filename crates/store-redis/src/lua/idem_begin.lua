-- IdempotencyStore::begin. KEYS: the record, its shard's index (id by claim time) and
-- its shard's node heartbeats, all in one slot. ARGV: id, fingerprint, now, lease_ms,
-- retention_ms, node, dead_after_ms, shard cap, record key prefix.
-- Replies {'proceed'} | {'mismatch'} | {'in_flight'} | {'full'} | {'replay', status, body}.
local now = tonumber(ARGV[3])

-- A claim blocks while its lease lasts and its holder lives: the caller itself, or a
-- node whose last heartbeat is fresher than dead_after_ms.
local function running(lease, holder)
  if not lease or tonumber(lease) <= now then return false end
  if holder == ARGV[6] then return true end
  local beat = holder and redis.call('HGET', KEYS[3], holder)
  return beat and tonumber(beat) > now - tonumber(ARGV[7]) or false
end

-- At the cap, forgets the oldest record that is not running (index entries whose
-- record Redis already expired go first). Looks at the 32 oldest only.
local function make_room()
  if redis.call('ZCARD', KEYS[2]) < tonumber(ARGV[8]) then return true end
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 31)) do
    local key = ARGV[9] .. id
    local f = redis.call('HMGET', key, 'lease', 'node', 'status')
    if f[3] or not running(f[1], f[2]) then
      redis.call('DEL', key)
      redis.call('ZREM', KEYS[2], id)
      return true
    end
  end
  return false
end

local r = redis.call('HMGET', KEYS[1], 'fp', 'lease', 'node', 'status', 'body')
if r[1] then
  if r[1] ~= ARGV[2] then return { 'mismatch' } end
  if r[4] then return { 'replay', r[4], r[5] or '' } end
  if running(r[2], r[3]) then return { 'in_flight' } end
  -- The first attempt's lease lapsed or its node died: this retry takes over.
elseif not make_room() then
  return { 'full' }
end
redis.call('HSET', KEYS[1], 'fp', ARGV[2], 'lease', string.format('%.0f', now + tonumber(ARGV[4])),
  'node', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], now, ARGV[1])
return { 'proceed' }
