-- QueueStore::finish: counts an admitted buyer once. KEYS: finished set, state.
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'finished', 1)
  return 1
end
return 0
