-- IdempotencyStore::abandon: forgets an unfinished claim; a finished one keeps its answer.
-- KEYS: the record, its shard's index. ARGV: the record's id.
if redis.call('HEXISTS', KEYS[1], 'status') == 1 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
