-- IdempotencyStore::abandon: forgets an unfinished claim of the given lease; a finished
-- one keeps its answer, and one a retry took over since is the retry's.
-- KEYS: the record, its shard's index. ARGV: the record's id, the lease's end and holder.
local r = redis.call('HMGET', KEYS[1], 'lease', 'node', 'status')
if r[3] or not r[1] or tonumber(r[1]) ~= tonumber(ARGV[2]) or r[2] ~= ARGV[3] then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
