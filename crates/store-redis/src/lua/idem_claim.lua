-- IdempotencyStore::begin as a function, for idem_begin.lua and hold_claimed.lua.
-- K: the record, its shard's index (id by claim time) and its shard's node heartbeats,
-- all in one slot. A: id, fingerprint, now, lease_ms, retention_ms, node,
-- dead_after_ms, shard cap, record key prefix.
-- Replies {'proceed'} | {'mismatch'} | {'in_flight'} | {'full'} | {'replay', status, body}.
local function idem_claim(K, A)
  local now = tonumber(A[3])

  -- A claim blocks while its lease lasts and its holder lives: the caller itself, or a
  -- node whose last heartbeat is fresher than dead_after_ms.
  local function running(lease, holder)
    if not lease or tonumber(lease) <= now then return false end
    if holder == A[6] then return true end
    local beat = holder and redis.call('HGET', K[3], holder)
    return beat and tonumber(beat) > now - tonumber(A[7]) or false
  end

  -- At the cap, forgets the oldest record that is not running (index entries whose
  -- record Redis already expired go first). Looks at the 32 oldest only.
  local function make_room()
    if redis.call('ZCARD', K[2]) < tonumber(A[8]) then return true end
    for _, id in ipairs(redis.call('ZRANGE', K[2], '0', '31')) do
      local key = A[9] .. id
      local f = redis.call('HMGET', key, 'lease', 'node', 'status')
      if f[3] or not running(f[1], f[2]) then
        redis.call('DEL', key)
        redis.call('ZREM', K[2], id)
        return true
      end
    end
    return false
  end

  local r = redis.call('HMGET', K[1], 'fp', 'lease', 'node', 'status', 'body')
  if r[1] then
    if r[1] ~= A[2] then return { 'mismatch' } end
    if r[4] then return { 'replay', r[4], r[5] or '' } end
    if running(r[2], r[3]) then return { 'in_flight' } end
    -- The first attempt's lease lapsed or its node died: this retry takes over.
  elseif not make_room() then
    return { 'full' }
  end
  redis.call('HSET', K[1], 'fp', A[2], 'lease', string.format('%d', now + tonumber(A[4])),
    'node', A[6])
  redis.call('PEXPIRE', K[1], A[5])
  redis.call('ZADD', K[2], A[3], A[1])
  return { 'proceed' }
end
