-- QueueStore::join as a function, for queue_join_run.lua and join_claimed.lua: the
-- buyer's existing place, or a new one. K: positions, state, pool. A: buyer, sale_open
-- ('1' seals the pool if nobody has yet; '2' is QueueStore::join_line: only into an
-- opened line, else { '-1', '0' }; any join while the line is restored gets that
-- too). Before opening the buyer goes to the pool at
-- position 0 (drawn at opening); after, to the back of the line. One step, so
-- positions stay dense and unique.
local function queue_join(K, A)
  if A[2] == '2' and redis.call('HGET', K[2], 'opened') ~= '1' then
    return { '-1', '0' }
  end
  local pos = redis.call('HGET', K[1], A[1])
  if pos then return { pos, '0' } end
  -- A line being put back (queue_restore.lua) gives no new place until it is whole: a
  -- place now could be one the restore is about to give, or in a pool already drawn.
  if A[2] ~= '2' and redis.call('HGET', K[2], 'restoring') == '1' then
    return { '-1', '0' }
  end
  if A[2] == '1' then redis.call('HSET', K[2], 'opened', 1) end
  local n = redis.call('HINCRBY', K[2], 'len', 1)
  if redis.call('HGET', K[2], 'opened') == '1' then
    redis.call('HSET', K[1], A[1], n)
    return { tostring(n), '1' }
  end
  redis.call('HINCRBY', K[2], 'pool', 1)
  redis.call('RPUSH', K[3], A[1])
  redis.call('HSET', K[1], A[1], 0)
  return { '0', '1' }
end
