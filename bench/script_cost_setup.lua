-- A general-admission event of ARGV[1] units in one section, as RedisArbiter::load
-- leaves it (lua/common.lua describes the keys), written directly so the cost bench
-- needs no engine. KEYS: the event's 12 keys. ARGV: units, seated flag ('0' or '1').
local n = tonumber(ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8],
  KEYS[9], KEYS[10])
for from = 0, n - 1, 3000 do
  local to = math.min(n, from + 3000) - 1
  local layout, scores = {}, {}
  for i = from, to do
    layout[#layout + 1] = struct.pack('>I2I2I4I4i8', 0, math.floor(i / 100), i, i, 5000)
    scores[#scores + 1] = i
    scores[#scores + 1] = i
  end
  redis.call('SETRANGE', KEYS[4], from * 20, table.concat(layout))
  redis.call('ZADD', KEYS[5], unpack(scores))
end
local bytes = math.floor((n + 7) / 8)
redis.call('SET', KEYS[2], string.rep('\255', bytes))
redis.call('SET', KEYS[3], string.rep('\0', bytes))
redis.call('HSET', KEYS[1], 'cap', n, 'max', 50, 'seated', ARGV[2], 'held', 0, 'sold', 0,
  'active', 0)
redis.call('HSET', KEYS[1], 'loaded', '1')
return 'ok'
