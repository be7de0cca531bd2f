-- QueueStore::seal_pool: later joins append after the pool. KEYS: state, pool. Replies
-- the pool's members until it is placed, then nothing.
redis.call('HSET', KEYS[1], 'opened', 1)
if redis.call('HGET', KEYS[1], 'placed') == '1' then return {} end
return redis.call('LRANGE', KEYS[2], 0, -1)
