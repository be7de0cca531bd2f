-- SeatArbiter::claim_rebuild: of the callers that find the event missing at once, one
-- is told to rebuild it ('mine') and the others to wait ('busy'); once a load has
-- ended (it deletes the claim) the answer is 'loaded'. ARGV: the claim's lifetime, ms.
if loaded() then return 'loaded' end
if redis.call('SET', CLAIM, '1', 'NX', 'PX', ARGV[1]) then return 'mine' end
return 'busy'
