-- IdempotencyStore::finish. KEYS[1]: the record; ARGV: status, body. No record means it
-- lapsed or was abandoned: nothing to replay it against.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'body', ARGV[2])
return 1
