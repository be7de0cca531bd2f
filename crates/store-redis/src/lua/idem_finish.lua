-- IdempotencyStore::finish. KEYS[1]: the record; ARGV: status, body, the lease's end and
-- holder. Only the claim that took that lease finishes: no record means it lapsed or was
-- abandoned, and a record claimed since by a retry (its holder dead, or its lease
-- lapsed) waits for the retry's answer.
local r = redis.call('HMGET', KEYS[1], 'lease', 'node', 'status')
if r[3] or not r[1] or tonumber(r[1]) ~= tonumber(ARGV[3]) or r[2] ~= ARGV[4] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'body', ARGV[2])
return 1
