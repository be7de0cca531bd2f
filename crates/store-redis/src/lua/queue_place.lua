-- QueueStore::place_pool, one chunk: ARGV[3..] take positions ARGV[1], ARGV[1]+1, ...;
-- ARGV[2] = '1' on the last chunk, which marks the pool placed (the list stays: it is
-- what the fairness endpoint publishes).
-- KEYS: positions, state, pool. A rerun with the same order rewrites the same numbers.
if redis.call('HGET', KEYS[2], 'placed') == '1' then return 0 end
if redis.call('HGET', KEYS[2], 'opened') ~= '1' then
  return redis.error_reply('place_pool needs a sealed pool')
end
local start = tonumber(ARGV[1])
-- Check the whole chunk before writing: a script's error does not undo its writes.
local seen = {}
for i = 3, #ARGV do
  local p = redis.call('HGET', KEYS[1], ARGV[i])
  if seen[ARGV[i]] or (p ~= '0' and p ~= tostring(start + i - 3)) then
    return redis.error_reply('not an unplaced pool member')
  end
  seen[ARGV[i]] = true
end
local last = start + #ARGV - 3
if ARGV[2] == '1' and last ~= (tonumber(redis.call('HGET', KEYS[2], 'pool')) or 0) then
  return redis.error_reply('place_pool needs every pool member once')
end
for i = 3, #ARGV do
  redis.call('HSET', KEYS[1], ARGV[i], start + i - 3)
end
if ARGV[2] == '1' then redis.call('HSET', KEYS[2], 'placed', 1) end
return 1
