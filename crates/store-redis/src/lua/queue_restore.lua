-- QueueStore::restore_line, one step. KEYS: positions, state, pool, finished,
-- admissions. ARGV[1] is the step:
--   'begin'   drops the line (the settings stay); `opened` is gone and `restoring`
--             set, so joins wait (queue_join.lua refuses them) until 'done';
--   'places'  ARGV[2..]: buyer, position, buyer, position, ...;
--   'pool'    ARGV[2..]: pool members, appended in arrival order;
--   'batches' ARGV[2..]: serving_up_to, at, ... (one admission batch each);
--   'done'    ARGV[2..5]: length, pool size, serving_up_to, at: the line is open
--             and placed again, and joins go on after it.
local step = ARGV[1]
if step == 'begin' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
  redis.call('HSET', KEYS[2], 'restoring', 1)
elseif step == 'places' then
  for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
elseif step == 'pool' then
  for i = 2, #ARGV do
    redis.call('RPUSH', KEYS[3], ARGV[i])
  end
elseif step == 'batches' then
  for i = 2, #ARGV, 2 do
    redis.call('ZADD', KEYS[5], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1])
  end
elseif step == 'done' then
  redis.call('HSET', KEYS[2], 'len', ARGV[2], 'pool', ARGV[3], 'serving', ARGV[4],
    'at', ARGV[5], 'finished', 0, 'sold_out', 0, 'opened', 1, 'placed', 1)
  redis.call('HDEL', KEYS[2], 'restoring')
else
  return redis.error_reply('unknown restore step')
end
return 1
