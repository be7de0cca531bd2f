-- ClaimedHolds::hold on a single Redis: the Idempotency-Key's claim (idem_claim.lua)
-- and, when it is granted, the hold (hold.lua), in one script, which also keeps the
-- hold's outcome as the key's answer (keep_outcome.lua). KEYS: the event's, then the
-- replay record, its shard's index and its shard's node heartbeats (another hash tag: a
-- single Redis lets one script touch both, a Redis Cluster would not). ARGV: the claim's 9 arguments,
-- the hold's id, then the hold's arguments.
-- Replies {'claim', <idem_claim's reply>} when the claim is not granted, else the
-- hold's reply.
local claim = idem_claim({ KEYS[13], KEYS[14], KEYS[15] }, { unpack(ARGV, 1, 9) })
if claim[1] ~= 'proceed' then
  table.insert(claim, 1, 'claim')
  return claim
end
local reply = hold({ unpack(ARGV, 11) })
-- An event the store lost is no answer: the node rebuilds it, holds again and keeps
-- that outcome itself.
if reply[1] ~= 'unknown_event' then keep_outcome({ KEYS[13] }, 'hold', ARGV[10], reply) end
return reply
