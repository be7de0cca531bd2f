-- IdempotencyStore::abandon: forgets an unfinished claim; a finished one keeps its answer.
if redis.call('HEXISTS', KEYS[1], 'status') == 1 then return 0 end
return redis.call('DEL', KEYS[1])
