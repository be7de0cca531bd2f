-- ClaimedJoins::join_line on a single Redis: the Idempotency-Key's claim
-- (idem_claim.lua) and, when it is granted, the place at the back of an opened line
-- (queue_join.lua with '2'), in one script, which also keeps 'joined' as the key's
-- answer: a retry runs the join again and finds the same place. KEYS: the line's
-- (positions, state, pool), then the replay record, its shard's index and its shard's
-- node heartbeats (another hash tag: a single Redis lets one script touch both, a Redis
-- Cluster would not). ARGV: the claim's 9 arguments, then the buyer.
-- Replies {'claim', <idem_claim's reply>} when the claim is not granted, else
-- queue_join's reply.
local claim = idem_claim({ KEYS[4], KEYS[5], KEYS[6] }, { unpack(ARGV, 1, 9) })
if claim[1] ~= 'proceed' then
  table.insert(claim, 1, 'claim')
  return claim
end
redis.call('HSET', KEYS[4], 'status', 'joined', 'body', '')
return queue_join({ KEYS[1], KEYS[2], KEYS[3] }, { ARGV[10], '2' })
