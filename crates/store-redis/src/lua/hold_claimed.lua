-- ClaimedHolds::hold on a single Redis: the Idempotency-Key's claim (idem_claim.lua)
-- and, when it is granted, the hold (hold.lua), in one script. KEYS: the event's, then
-- the replay record, its shard's index and its shard's node heartbeats (another hash
-- tag: a single Redis lets one script touch both, a Redis Cluster would not). ARGV: the
-- claim's 9 arguments, then the hold's.
-- Replies {'claim', <idem_claim's reply>} when the claim is not granted, else the
-- hold's reply.
local claim = idem_claim({ KEYS[13], KEYS[14], KEYS[15] }, { unpack(ARGV, 1, 9) })
if claim[1] ~= 'proceed' then
  table.insert(claim, 1, 'claim')
  return claim
end
return hold({ unpack(ARGV, 10) })
