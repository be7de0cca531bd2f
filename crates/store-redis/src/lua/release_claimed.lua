-- ClaimedHolds::release on a single Redis: the Idempotency-Key's claim (idem_claim.lua)
-- and, when it is granted, the buyer's release of their hold, and the buyer counted as
-- a finished shopper in the waiting room (queue_finish.lua), in one script, which also
-- keeps the release's outcome as the key's answer (keep_outcome.lua). KEYS: the
-- event's, then the replay record, its shard's index and its shard's node heartbeats,
-- then (when given) the line's finished set and state. ARGV: the claim's 9 arguments,
-- then the hold's id, nonce, buyer, keep, the buyer's 16 bytes (for the line).
-- Replies {'claim', <idem_claim's reply>} when the claim is not granted; else
-- {'ok', record, released now '1'|'0', counted '1'|'0'} or {error code, detail?}, the
-- answers of ClaimThenHold::release_checked: another buyer's hold is unknown, only a
-- held hold is released, one that ended already is answered as it is.
local claim = idem_claim({ KEYS[13], KEYS[14], KEYS[15] }, { unpack(ARGV, 1, 9) })
if claim[1] ~= 'proceed' then
  table.insert(claim, 1, 'claim')
  return claim
end

local function release()
  local nonce, buyer, keep = ARGV[11], ARGV[12], tonumber(ARGV[13])
  if not loaded() then return { 'unknown_hold' } end
  local rec = redis.call('HGET', HOLDS, nonce)
  if not rec then return { 'unknown_hold' } end
  local h = parse(rec)
  if h.b ~= buyer then return { 'unknown_hold' } end
  if h.st == 'R' or h.st == 'E' then return { 'ok', rec, '0', '0' } end
  if h.st ~= 'H' then return { 'wrong_state', h.st } end
  rec = end_hold(nonce, h, 'release', keep)
  if not KEYS[16] then return { 'ok', rec, '1', '0' } end
  if redis.call('SADD', KEYS[16], ARGV[14]) == 1 then
    redis.call('HINCRBY', KEYS[17], 'finished', 1)
  end
  return { 'ok', rec, '1', '1' }
end

local reply = release()
keep_outcome({ KEYS[13] }, 'release', ARGV[10], reply)
return reply
